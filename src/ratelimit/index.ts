import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import type { RateLimiter } from './limiter.js';
import { MemoryRateLimiter } from './memory.js';
import { RedisRateLimiter } from './redis.js';

export type { RateLimiter, RateLimitPolicy, RateLimitedCaller } from './limiter.js';

/** Redis-backed (shared by all instances) when REDIS_URL is set, else in this process's memory. */
export async function createRateLimiter(o: {
  redisUrl: string | null;
  keyPrefix: string;
  production: boolean;
  clock: Clock;
  logger: Logger;
}): Promise<RateLimiter> {
  if (!o.redisUrl) {
    if (o.production) o.logger.warn('REDIS_URL is not set: rate limits are kept per instance; set it when running several instances');
    return new MemoryRateLimiter(o.clock);
  }
  const limiter = new RedisRateLimiter({ url: o.redisUrl, keyPrefix: o.keyPrefix, clock: o.clock, logger: o.logger });
  await limiter.connect();
  return limiter;
}
