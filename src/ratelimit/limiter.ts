import type { MaybePromise } from '../lib/maybe-promise.js';

/**
 * Token buckets for PROTOCOL 2 rate limits: one bucket per caller (`game:<id>`,
 * `partner:<id>`, `ip:<address>`), refilled at `perSecond` tokens per second, holding at most
 * one second's worth (burst = perSecond). Every request takes one token. The wrong
 * admin tokens and metrics tokens of an address (`admin-auth:<address>`, `metrics-auth:<address>`)
 * are slower buckets with a burst of their own.
 */

/** What a rate-limited caller is limited by. The authenticated caller (req.caller) provides it. */
export interface RateLimitPolicy {
  /** Bucket key, e.g. `game:<game_id>`, `partner:<partner_id>`, `ip:<address>`. */
  key: string;
  /** Sustained rate; also the bucket size (burst = one second's worth) unless `burst` is set. */
  perSecond: number;
  /** Bucket size when it is not one second's worth (a rate below one a second). */
  burst?: number;
}

/** A caller object that carries its own policy (game and partner snapshots). */
export interface RateLimitedCaller {
  rateLimit: RateLimitPolicy;
}

export interface TakeResult {
  allowed: boolean;
  /** Whole tokens left after this request. */
  remaining: number;
  /** When refused: milliseconds until one token is available; 0 when allowed. */
  retryAfterMs: number;
  /** Milliseconds until the bucket is full again. */
  resetMs: number;
  /** True when the store could not be asked and the request was let through (fail open). */
  degraded?: boolean;
}

export interface RateLimiter {
  /**
   * Takes one token from the policy's bucket. Never throws: on a store failure it allows.
   * Synchronous where the buckets are in this process (memory), a promise where they are shared
   * (Redis).
   */
  take(policy: RateLimitPolicy): MaybePromise<TakeResult>;
  /**
   * Whether a token could be taken now, without taking it (`allowed`, and when not, how long
   * until one can). Never throws; on a store failure it allows.
   */
  peek(policy: RateLimitPolicy): MaybePromise<TakeResult>;
  close(): Promise<void>;
}

/** A policy's bucket size: its burst, else one second's worth. */
export function capacityOf(policy: RateLimitPolicy): number {
  return policy.burst ?? policy.perSecond;
}

/** The refill arithmetic shared by the in-memory bucket and the Redis script (kept identical). */
export function refill(tokens: number, lastMs: number, nowMs: number, perSecond: number, capacity = perSecond): number {
  const elapsed = Math.max(0, nowMs - lastMs);
  return Math.min(capacity, tokens + (elapsed * perSecond) / 1000);
}

export function outcome(tokensAfter: number, allowed: boolean, perSecond: number, capacity = perSecond): TakeResult {
  return {
    allowed,
    remaining: Math.max(0, Math.floor(tokensAfter)),
    retryAfterMs: allowed ? 0 : wholeMs(((1 - tokensAfter) * 1000) / perSecond),
    resetMs: wholeMs(((capacity - tokensAfter) * 1000) / perSecond),
  };
}

/**
 * Milliseconds rounded up, but not for a floating-point residue: a third of a token at 1/30 a
 * second is 20000.000000000004 ms, which is 20 s to wait, not 21.
 */
function wholeMs(ms: number): number {
  return Math.ceil(ms - 1e-6);
}

/** The caller's own policy, when it carries one (see RateLimitedCaller). */
export function policyOfCaller(caller: unknown): RateLimitPolicy | null {
  const p = (caller as Partial<RateLimitedCaller> | null | undefined)?.rateLimit;
  return p && typeof p.key === 'string' && p.perSecond > 0 ? p : null;
}
