import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { StoreDatabase } from '../db/database.js';
import { Errors } from '../errors.js';
import { addressGroup } from '../lib/address-group.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { isPromise } from '../lib/maybe-promise.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { RateLimiter, RateLimitPolicy } from '../ratelimit/limiter.js';
import type { GameLookups } from './access.js';
import { installScopeHooks, operatorGuard, type CookieSettings } from './guard.js';
import { registerOidcRoutes, type OidcSettings } from './oidc.js';
import { registerOperatorRoutes } from './routes.js';
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

export interface OperatorsOptions {
  database: StoreDatabase;
  clock: Clock;
  ids: IdGenerator;
  secrets: SecretBox;
  limiter: RateLimiter;
  publicBaseUrl: string;
  settings: OperatorSettings;
  /** The ADMIN_TOKEN check with its guessing limit (http/bearer-guard.ts). */
  adminToken: (req: FastifyRequest) => void | Promise<void>;
  onLimited?(policy: RateLimitPolicy): void;
}

export interface Operators {
  /** The `admin` auth step of every operator route. */
  authenticate(req: FastifyRequest): Promise<void>;
  /** The scope hooks: call before any route is registered. */
  install(app: FastifyInstance): void;
  /** The operators domain's own routes. */
  register(app: FastifyInstance): void;
}

/** Operator accounts, sessions, API keys and the access rules of the operator API (operators.md 1). */
export function createOperators(o: OperatorsOptions): Operators {
  const store = new OperatorStore(o.database);
  const accounts = new AccountService({ store, clock: o.clock, ids: o.ids, publicBaseUrl: o.publicBaseUrl });
  const signIn = new SignInService({ store, clock: o.clock, ids: o.ids, secrets: o.secrets, limiter: o.limiter, settings: o.settings, onLimited: o.onLimited });
  const lookups: GameLookups = {
    orderGame: (id) => store.gameOf(store.db, 'orders', id),
    notificationGame: (id) => store.gameOf(store.db, 'notifications', id),
  };
  const perMinute = o.settings.authFailuresPerMinute;
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
  const authenticate = operatorGuard({ signIn, cookie: o.settings, adminToken: o.settings.adminTokenDisabled ? null : o.adminToken, wrongKey, lookups });
  return {
    authenticate,
    install: (app) => installScopeHooks(app, lookups),
    register: (app) => {
      registerOperatorRoutes(app, accounts, signIn, o.settings);
      if (o.settings.oidc) registerOidcRoutes(app, { settings: o.settings.oidc, signIn, secrets: o.secrets, cookie: o.settings, clock: o.clock, publicBaseUrl: o.publicBaseUrl });
    },
  };
}
