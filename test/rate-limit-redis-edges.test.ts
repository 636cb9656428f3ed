import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { REDIS_BREAK_MS } from '../src/ratelimit/redis.js';
import { createGame, signed, startService, type Answer, type TestGame, type TestService } from './helpers/service.js';
import { HangingRelay } from './helpers/hanging-relay.js';
import { waitFor } from './helpers/wait.js';
import { REDIS_URL, connectTestRedis, dropKeysAndClose } from './helpers/redis.js';

// Edges of the Redis-backed token bucket (src/ratelimit/redis.ts) that test/rate-limit.test.ts
// leaves open: the cap at one second's worth, `at` never moving backwards, the key expiry, and
// the circuit break under concurrent requests.

/** Every key of this file's run lives under this; each test adds its own part (see prefix()). */
const RUN_PREFIX = `test:rl-edges:${randomBytes(6).toString('hex')}:`;
let testNo = 0;
const prefix = () => `${RUN_PREFIX}${++testNo}:`;

const enter = (t: TestService, g: TestGame) =>
  signed(t, g, 'POST', '/v1/server/enter-game', { combo_id: 'p1', session_id: `s-${randomBytes(4).toString('hex')}` });

describe('Redis rate limiter edges', () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = await connectTestRedis();
  });
  afterAll(() => dropKeysAndClose(redis, RUN_PREFIX));

  it('caps the bucket at one second\'s worth: after 3 s idle a rate-4 game gets 4 requests, the 5th is 429', async () => {
    // limiter.ts: "holding at most one second's worth (burst = perSecond)"; the Lua script
    // applies the same refill arithmetic.
    const clock = new ManualClock(Date.UTC(2026, 10, 23, 8, 0, 0));
    const t = await startService({ clock, env: { REDIS_URL, REDIS_KEY_PREFIX: prefix() } });
    try {
      const g = await createGame(t, { rate_limit_per_second: 4 });
      const first = await enter(t, g);
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit')).toBe('"game";r=3;t=1'); // from Redis, not degraded
      clock.advance(3000); // 3 + 12 tokens of refill: capped at 4
      const statuses = [];
      for (let i = 0; i < 5; i++) statuses.push((await enter(t, g)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 429]);
    } finally {
      await t.stop();
    }
  });

  it('an instance whose clock lags 2 s cannot mint tokens: alternating requests get no more than the burst', async () => {
    // redis.ts / docs/operations.md: "`at` never moves backwards, so an instance whose clock
    // lags cannot mint tokens". The leading instance asks first; the lagging one must not pull
    // the bucket's time back, or the leading one's next request sees 2 s of refill.
    const start = Date.UTC(2026, 10, 23, 8, 0, 0);
    const ahead = new ManualClock(start);
    const behind = new ManualClock(start - 2000);
    const env = { REDIS_URL, REDIS_KEY_PREFIX: prefix() };
    const secretsKey = randomBytes(32);
    const a = await startService({ clock: ahead, env, secretsKey });
    const b = await startService({ clock: behind, env, secretsKey, db: a.db });
    try {
      const g = await createGame(a, { rate_limit_per_second: 4 });
      const answers: Answer[] = [];
      for (let i = 0; i < 8; i++) answers.push(await enter(i % 2 ? b : a, g));
      expect(answers.map((x) => x.status)).toEqual([200, 200, 200, 200, 429, 429, 429, 429]);
      // Every answer came from the shared bucket (none failed open).
      expect(answers.every((x) => x.headers.get('ratelimit') !== null)).toBe(true);
    } finally {
      await b.stop();
      await a.stop();
    }
  });

  it('a bucket key expires (PTTL > 0 and at most 5 s), so Redis does not keep one key per caller for ever', async () => {
    // docs/operations.md: keys are `<REDIS_KEY_PREFIX>rl:<kind>:<id>` and expire 5 s after their last use.
    const keyPrefix = prefix();
    const clock = new ManualClock();
    const t = await startService({ clock, env: { REDIS_URL, REDIS_KEY_PREFIX: keyPrefix } });
    try {
      const g = await createGame(t, { rate_limit_per_second: 10 });
      expect((await enter(t, g)).headers.get('ratelimit')).not.toBeNull();
      const ttl = await redis.pttl(`${keyPrefix}rl:game:${g.gameId}`);
      expect(ttl).toBeGreaterThan(0); // -1: no expiry; -2: no such key
      expect(ttl).toBeLessThanOrEqual(5000);
    } finally {
      await t.stop();
    }
  });

  it('after Redis recovers from a blip, 5 concurrent requests are all limited by Redis again (none fail open)', async () => {
    // docs/operations.md: "the limits hold again as soon as Redis answers". The 5 are sent
    // while Redis is hung, so that all of them are in flight together: each must send its own
    // command (none is let through as if the break were still open). Five, not more: all must
    // be sent within the 500 ms command time-out of the first, also on a loaded machine.
    const relay = await new HangingRelay(new URL(REDIS_URL)).start();
    const clock = new ManualClock();
    const t = await startService({ clock, env: { REDIS_URL: `redis://127.0.0.1:${relay.port}`, REDIS_KEY_PREFIX: prefix() } });
    try {
      const g = await createGame(t, { rate_limit_per_second: 1000 });
      expect((await enter(t, g)).headers.get('ratelimit')).not.toBeNull();
      // The blip: one command times out, the break opens.
      relay.hang();
      expect((await enter(t, g)).headers.get('ratelimit')).toBeNull();
      const oneCommand = relay.heldBytes;
      expect(oneCommand).toBeGreaterThan(0);
      relay.resume();
      clock.advance(REDIS_BREAK_MS);
      expect((await enter(t, g)).headers.get('ratelimit')).not.toBeNull(); // the probe closes the break

      relay.hang();
      const base = relay.heldBytes;
      let settled = 0;
      const all = Array.from({ length: 5 }, () => enter(t, g).finally(() => settled++));
      // Either all 5 commands reach (hung) Redis, or some request was answered without asking.
      await waitFor(() => relay.heldBytes - base >= 5 * oneCommand || settled > 0, '5 commands or an early answer', 5000);
      relay.resume();
      const answers = await Promise.all(all);
      expect(answers.map((a) => a.status)).toEqual(Array(5).fill(200));
      expect(answers.filter((a) => a.headers.get('ratelimit') === null).length).toBe(0);
    } finally {
      await t.stop();
      await relay.close();
    }
  });

  it('with Redis hung, 5 concurrent requests after the break send only one probe command', async () => {
    // redis.ts REDIS_BREAK_MS / docs/operations.md: after the break "one request asks again"
    // (the others are allowed at once), not a stampede of commands on a hung Redis.
    const relay = await new HangingRelay(new URL(REDIS_URL)).start();
    const clock = new ManualClock();
    const t = await startService({ clock, env: { REDIS_URL: `redis://127.0.0.1:${relay.port}`, REDIS_KEY_PREFIX: prefix() } });
    try {
      const g = await createGame(t, { rate_limit_per_second: 1000 });
      expect((await enter(t, g)).headers.get('ratelimit')).not.toBeNull();
      relay.hang();
      expect((await enter(t, g)).headers.get('ratelimit')).toBeNull(); // times out: the break opens
      const oneCommand = relay.heldBytes;
      expect(oneCommand).toBeGreaterThan(0);
      clock.advance(REDIS_BREAK_MS);
      const answers = await Promise.all(Array.from({ length: 5 }, () => enter(t, g)));
      expect(answers.map((a) => [a.status, a.headers.get('ratelimit')])).toEqual(Array(5).fill([200, null]));
      expect(relay.heldBytes).toBe(2 * oneCommand); // the first time-out's command and one probe
    } finally {
      await t.stop();
      await relay.close();
    }
  });
});
