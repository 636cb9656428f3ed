import type { FastifyInstance, FastifyRequest } from 'fastify';
import { registerAuditRoutes } from '../admin/audit-routes.js';
import { Errors } from '../errors.js';
import { addressGroup } from '../lib/address-group.js';
import { isPromise } from '../lib/maybe-promise.js';
import type { DomainModule, Infra } from '../wiring/infra.js';
import type { RateLimiter, RateLimitPolicy } from '../ratelimit/limiter.js';
import type { GameLookups } from './access.js';
import { installScopeHooks, operatorGuard, type CookieSettings } from './guard.js';
import { registerOidcRoutes, type OidcSettings } from './oidc.js';
import { registerOperatorRoutes } from './routes.js';
import type { SignInOptions } from './schemas.js';
import { AccountService } from './service.js';
import { SignInService, type SignInSettings } from './sign-in.js';
import { OperatorStore } from './store.js';

export interface OperatorSettings extends SignInSettings, CookieSettings {
  /** ADMIN_TOKEN_DISABLED: the bootstrap token is refused. */
  adminTokenDisabled: boolean;
  /** ADMIN_AUTH_FAILURES_PER_MINUTE: wrong API keys share the wrong ADMIN_TOKEN bucket. */
  authFailuresPerMinute: number;
  oidc: OidcSettings | null;
}

export interface OperatorsOptions extends Infra {
  limiter: RateLimiter;
  /** The ADMIN_TOKEN check with its guessing limit (http/bearer-guard.ts). */
  adminToken: (req: FastifyRequest) => void | Promise<void>;
  onLimited?(policy: RateLimitPolicy): void;
}

export interface Operators extends DomainModule {
  /** The `admin` auth step of every operator route. */
  authenticate(req: FastifyRequest): Promise<void>;
  /** The scope hooks: call before any route is registered. */
  install(app: FastifyInstance): void;
}

/**
 * Operator accounts, sessions, API keys and the access rules of the operator API (operators.md 1),
 * and the audit log of operator actions.
 */
export function createOperators(o: OperatorsOptions): Operators {
  const { database, config } = o;
  const settings = config.operators;
  const publicBaseUrl = config.publicBaseUrl;
  const store = new OperatorStore(database);
  const accounts = new AccountService({ store, clock: o.clock, ids: o.ids, publicBaseUrl });
  const signIn = new SignInService({ store, clock: o.clock, ids: o.ids, secrets: o.secrets, limiter: o.limiter, settings, onLimited: o.onLimited });
  const lookups: GameLookups = {
    orderGame: (id) => store.gameOf(store.db, 'orders', id),
    notificationGame: (id) => store.gameOf(store.db, 'notifications', id),
  };
  const perMinute = settings.authFailuresPerMinute;
  const wrongKey = async (req: FastifyRequest): Promise<void> => {
    if (perMinute === 0) return;
    const policy: RateLimitPolicy = { key: `admin-auth:${addressGroup(req.ip)}`, perSecond: perMinute / 60, burst: perMinute };
    const taken = o.limiter.take(policy);
    const r = isPromise(taken) ? await taken : taken;
    if (r.allowed) return;
    o.onLimited?.(policy);
    const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
    throw Errors.rateLimited(`too many wrong API keys from this address; retry after ${retryAfter} s`, { 'retry-after': String(retryAfter) });
  };
  const authenticate = operatorGuard({ signIn, cookie: settings, adminToken: settings.adminTokenDisabled ? null : o.adminToken, wrongKey, lookups });
  return {
    authenticate,
    install: (app) => installScopeHooks(app, lookups),
    registerRoutes: (app) => {
      registerAuditRoutes(app, database.db);
      registerOperatorRoutes(app, accounts, signIn, settings, signInOptions(settings));
      if (settings.oidc) registerOidcRoutes(app, { settings: settings.oidc, signIn, secrets: o.secrets, cookie: settings, clock: o.clock, publicBaseUrl });
    },
    jobs: [],
  };
}

/** What the console's sign-in page offers (GET /admin/v1/sign-in-options). */
function signInOptions(s: OperatorSettings): SignInOptions {
  const oidc = s.oidc ? { provider: s.oidc.displayName, start_url: '/admin/v1/oidc/start' } : null;
  return { password: true, oidc, admin_token: !s.adminTokenDisabled };
}
