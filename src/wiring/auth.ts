import type { FastifyRequest } from 'fastify';
import type { Config } from '../config/index.js';
import type { GameService, GameSnapshot } from '../games/service.js';
import { bearerToken, screenSignedRequest, verifySignedRequest, type CallerDirectory } from '../http/auth.js';
import { bearerGuard } from '../http/bearer-guard.js';
import type { AppHooks } from '../http/check-order.js';
import { limit, rateLimitHook, requestPolicy, tokenPolicy } from '../http/rate-limit.js';
import type { AuthKind } from '../lib/auth-kind.js';
import type { Clock } from '../lib/clock.js';
import { isPromise, type MaybePromise } from '../lib/maybe-promise.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import type { TokenLimit } from '../checkout/routes.js';
import { parseOrderToken } from '../orders/token.js';
import type { PartnerService } from '../partners/service.js';
import type { RateLimiter, RateLimitPolicy } from '../ratelimit/limiter.js';

type Authenticate = (req: FastifyRequest) => void | Promise<void>;

/** The rate limits of requests and the bearer-token checks with their guessing limit. */
export interface RequestLimits {
  /** Told of every refusal (metrics). */
  onLimited(policy: RateLimitPolicy): void;
  /** Per client and per signed caller (PROTOCOL 2). */
  rateLimit: NonNullable<AppHooks['rateLimit']>;
  /** Per order_token, on the client API (PROTOCOL 10). */
  limitToken: TokenLimit;
  /** ADMIN_TOKEN, with ADMIN_AUTH_FAILURES_PER_MINUTE. */
  adminToken: Authenticate;
  /** METRICS_TOKEN, when set. */
  metricsToken: Authenticate | null;
}

export function requestLimits(config: Config, limiter: RateLimiter, metrics: ServiceMetrics): RequestLimits {
  const onLimited = (p: RateLimitPolicy) => metrics.rateLimited(p.key.split(':', 1)[0] as string);
  const guard = (token: ReturnType<typeof bearerToken>, bucket: string, guessed: string) =>
    bearerGuard({ token, bucket, guessed, limiter, failuresPerMinute: config.adminAuthFailuresPerMinute, onLocked: onLimited });
  return {
    onLimited,
    rateLimit: rateLimitHook({ limiter, policyFor: requestPolicy(config.clientRateLimitPerSecond), onLimited }),
    limitToken: (reply, token) => {
      const policy = tokenPolicy(parseOrderToken(token)?.orderId ?? null, config.clientRateLimitPerSecond);
      return policy ? limit({ limiter, onLimited }, policy, reply) : undefined;
    },
    adminToken: guard(bearerToken(config.adminToken, 'admin token', 'admin token is not valid'), 'admin-auth', 'admin tokens'),
    metricsToken: config.metricsToken ? guard(bearerToken(config.metricsToken, 'METRICS_TOKEN', 'metrics token is not valid'), 'metrics-auth', 'metrics tokens') : null,
  };
}

export interface AuthDispatchOptions {
  games: GameService;
  partners: PartnerService;
  /** The `admin` step: operator sessions, API keys and ADMIN_TOKEN (src/operators). */
  admin: Authenticate;
  clock: Clock;
}

/**
 * The auth step of each route's `config.auth`: signed requests of games and partners (their
 * headers screened before the body is read), operators for `admin`.
 */
export function authDispatch(o: AuthDispatchOptions): Pick<AppHooks, 'screen' | 'authenticate'> {
  const directory = signedCallers(o.games, o.partners);
  return {
    screen: (req: FastifyRequest, kind: AuthKind) => {
      if (kind === 'game' || kind === 'partner') return screenSignedRequest(req, directory, kind, o.clock.now());
    },
    authenticate: (req: FastifyRequest, kind: AuthKind) => {
      if (kind === 'admin') return o.admin(req);
      if (kind === 'game' || kind === 'partner') {
        const caller = verifySignedRequest(req, directory, kind, o.clock.now());
        const attach = (c: { record: unknown }) => void (req.caller = c.record);
        return isPromise(caller) ? caller.then(attach) : attach(caller);
      }
    },
  };
}

/** A game or partner snapshot holds its keys: the signed caller is the snapshot with them. */
function signedCallers(games: GameService, partners: PartnerService): CallerDirectory<GameSnapshot, unknown> {
  const asCaller = <S extends { secrets: string[] }>(snap: S | null) => (snap ? { record: snap, secrets: snap.secrets } : null);
  const signedCaller = <S extends { secrets: string[] }>(snap: MaybePromise<S | null>) => (isPromise(snap) ? snap.then(asCaller) : asCaller(snap));
  // A game's verified request tells which key it signs with (operators.md 2).
  const gameCaller = (snap: GameSnapshot | null) => (snap ? { record: snap, secrets: snap.secrets, keyUsed: games.keyUsed } : null);
  return {
    game: (id) => {
      const snap = games.lookup(id);
      return isPromise(snap) ? snap.then(gameCaller) : gameCaller(snap);
    },
    partner: (id) => signedCaller(partners.lookup(id)),
  };
}
