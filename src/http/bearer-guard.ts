import type { FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import { addressGroup } from '../lib/address-group.js';
import { isPromise } from '../lib/maybe-promise.js';
import type { RateLimiter, RateLimitPolicy, TakeResult } from '../ratelimit/limiter.js';
import { bearerRefusal, verifyBearer, type BearerToken } from './auth.js';

export interface BearerGuardOptions {
  token: BearerToken;
  /** The bucket's name (`admin-auth`, `metrics-auth`): its key prefix and its metrics label. */
  bucket: string;
  /** What the lock-out answer says was wrong: `admin tokens`, `metrics tokens`. */
  guessed: string;
  limiter: RateLimiter;
  /** ADMIN_AUTH_FAILURES_PER_MINUTE; 0: wrong tokens are not limited. */
  failuresPerMinute: number;
  /** Told of every request refused because its address is locked out (metrics). */
  onLocked?(policy: RateLimitPolicy): void;
}

/**
 * A bearer token check with a limit on guessing (the operator API's ADMIN_TOKEN, /metrics'
 * METRICS_TOKEN, each with buckets of its own): an address (req.ip, which honours TRUST_PROXY;
 * an IPv6 one by its /64, see addressGroup) may present `failuresPerMinute` wrong tokens in a
 * burst, then one more every 60 / failuresPerMinute seconds. Past that, every request from it is
 * refused 429 `rate_limited` with Retry-After, the right token included: a right guess answered
 * anything but 429 while wrong ones are would tell the guesser it was right. Only wrong tokens
 * use the bucket, taken atomically, so many guesses in parallel get no more 401s than the bucket
 * holds, and the right token's own requests, however many, never lock anyone out. A request
 * without a bearer token is not a guess: it is answered 401 and not counted.
 *
 * The buckets are the rate limiter's (Redis when REDIS_URL is set, so all instances share
 * them); like the other limits it fails open when Redis does not answer.
 */
export function bearerGuard(o: BearerGuardOptions): (req: FastifyRequest) => void | Promise<void> {
  if (o.failuresPerMinute === 0) return (req) => verifyBearer(req, o.token);
  return (req) => {
    const refusal = bearerRefusal(req, o.token);
    if (refusal && !refusal.guess) throw refusal.error();
    const policy: RateLimitPolicy = { key: `${o.bucket}:${addressGroup(req.ip)}`, perSecond: o.failuresPerMinute / 60, burst: o.failuresPerMinute };
    const decide = (r: TakeResult): void => {
      if (!r.allowed) {
        o.onLocked?.(policy);
        const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
        throw Errors.rateLimited(`too many wrong ${o.guessed} from this address; retry after ${retryAfter} s`, { 'retry-after': String(retryAfter) });
      }
      if (refusal) throw refusal.error();
    };
    const r = refusal ? o.limiter.take(policy) : o.limiter.peek(policy);
    return isPromise(r) ? r.then(decide) : decide(r);
  };
}
