import { Redis } from 'ioredis';

/** The Redis the tests use (TEST_REDIS_URL); the service's own REDIS_URL in them. */
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A connection to the tests' Redis, or a plain error saying it is missing: the rate limiters
 * fail open, so without this a missing Redis would show as confusing 200s.
 */
export async function connectTestRedis(): Promise<Redis> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch (e) {
    redis.disconnect();
    throw new Error(`these tests need Redis at ${REDIS_URL} (TEST_REDIS_URL): ${(e as Error).message}`);
  }
}

/** Deletes every key under `prefix` and closes the connection. */
export async function dropKeysAndClose(redis: Redis | undefined, prefix: string): Promise<void> {
  if (!redis) return;
  if (redis.status !== 'ready') return void redis.disconnect();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
  await redis.quit();
}
