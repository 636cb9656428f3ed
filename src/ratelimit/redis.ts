import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import { capacityOf, outcome, type RateLimiter, type RateLimitPolicy, type TakeResult } from './limiter.js';

/**
 * One atomic step of a token bucket, run inside Redis so every service instance shares it.
 * Same arithmetic as `refill` in limiter.ts (ARGV: now, rate per second, bucket size), and the
 * same precision: tokens are stored and answered to 17 significant digits, as a double holds
 * them (rounded to 6 decimals, a bucket refilling at 1/30 a second told a 20 s wait as 21). `at`
 * never moves backwards, so an instance whose clock lags cannot mint tokens. A missing key is a
 * full bucket; it expires once it would be full anyway (the time to refill it, plus margin).
 */
const BUCKET = `
local now = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local capacity = tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = tonumber(b[1])
local at = tonumber(b[2])
if tokens == nil or at == nil then
  tokens = capacity
  at = now
end
local elapsed = now - at
if elapsed < 0 then elapsed = 0 end
tokens = math.min(capacity, tokens + elapsed * rate / 1000)
`;

// A refusal writes nothing: below the bucket's size the refill is linear, so the next step
// computes the same tokens from the stored ones, and the key still expires only once the bucket
// would be full. It also makes a refusal cost what a peek does (http/bearer-guard.ts: a right admin
// token from a locked-out address must not answer faster than a wrong one).
const TAKE_SCRIPT = `${BUCKET}
if tokens < 1 then
  return {0, string.format('%.17g', tokens)}
end
tokens = tokens - 1
if now > at then at = now end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tokens), 'at', tostring(at))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity * 1000 / rate) + 4000)
return {1, string.format('%.17g', tokens)}
`;

/** The same bucket read without taking a token: nothing is written. */
const PEEK_SCRIPT = `${BUCKET}
local allowed = 0
if tokens >= 1 then allowed = 1 end
return {allowed, string.format('%.17g', tokens)}
`;

/**
 * After a failed command Redis is not asked for this long: each request is allowed at once
 * (fail open) instead of waiting for its own command to time out, since a hung Redis would
 * otherwise add commandTimeoutMs to every request. Then one request asks again (the others
 * are still allowed at once) and closes the break if Redis answers.
 */
export const REDIS_BREAK_MS = 1000;

type BucketScript = (key: string, now: number, rate: number, capacity: number) => Promise<[number, string]>;
type BucketRedis = Redis & { takeToken: BucketScript; peekToken: BucketScript };

export interface RedisRateLimiterOptions {
  url: string;
  /** Prefix of every key this service writes (REDIS_KEY_PREFIX); `rl:` is appended. */
  keyPrefix: string;
  clock: Clock;
  logger: Logger;
  /** A Redis command slower than this counts as a failure (fail open). */
  commandTimeoutMs?: number;
}

/**
 * Buckets in Redis, shared by all instances. When Redis is unreachable or slow the request is
 * ALLOWED (fail open) and a warning is logged at most every 10 s: a rate limiter outage must
 * not become a payment outage; the limit protects capacity, it is not a security boundary.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: BucketRedis;
  private lastWarnAt = 0;
  /** Clock time until which Redis is not asked (REDIS_BREAK_MS); 0 while Redis answers. */
  private brokenUntil = 0;
  /** While broken: a request is asking Redis whether it is back. */
  private probing = false;

  constructor(private readonly o: RedisRateLimiterOptions) {
    this.redis = new Redis(o.url, {
      keyPrefix: `${o.keyPrefix}rl:`,
      lazyConnect: true,
      // Commands fail at once while disconnected instead of queueing behind a dead server.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: o.commandTimeoutMs ?? 500,
      retryStrategy: (times) => Math.min(times * 200, 2000),
    }) as BucketRedis;
    this.redis.defineCommand('takeToken', { numberOfKeys: 1, lua: TAKE_SCRIPT });
    this.redis.defineCommand('peekToken', { numberOfKeys: 1, lua: PEEK_SCRIPT });
    this.redis.on('error', (err: Error) => this.warn(err));
  }

  /** Connects; on failure the service still starts (fail open) and ioredis keeps retrying. */
  async connect(timeoutMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([this.redis.connect(), timeout]);
    } catch (err) {
      this.warn(err as Error);
    } finally {
      clearTimeout(timer);
    }
  }

  take(policy: RateLimitPolicy): Promise<TakeResult> {
    return this.run(this.redis.takeToken, policy);
  }

  peek(policy: RateLimitPolicy): Promise<TakeResult> {
    return this.run(this.redis.peekToken, policy);
  }

  private async run(script: BucketScript, policy: RateLimitPolicy): Promise<TakeResult> {
    const probe = this.brokenUntil !== 0;
    if (probe && (this.probing || this.o.clock.now() < this.brokenUntil)) return failOpen(policy);
    if (probe) this.probing = true;
    try {
      const capacity = capacityOf(policy);
      const [allowed, tokens] = await script.call(this.redis, policy.key, this.o.clock.now(), policy.perSecond, capacity);
      this.brokenUntil = 0;
      return outcome(Number(tokens), allowed === 1, policy.perSecond, capacity);
    } catch (err) {
      this.brokenUntil = this.o.clock.now() + REDIS_BREAK_MS;
      this.warn(err as Error);
      return failOpen(policy);
    } finally {
      if (probe) this.probing = false;
    }
  }

  private warn(err: Error): void {
    const now = Date.now();
    if (now - this.lastWarnAt < 10_000) return;
    this.lastWarnAt = now;
    this.o.logger.warn({ err: { message: err.message } }, 'rate limiter: Redis unavailable, allowing requests (fail open)');
  }

  async close(): Promise<void> {
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
      else this.redis.disconnect();
    } catch {
      this.redis.disconnect();
    }
  }
}

function failOpen(policy: RateLimitPolicy): TakeResult {
  return { allowed: true, remaining: capacityOf(policy), retryAfterMs: 0, resetMs: 0, degraded: true };
}
