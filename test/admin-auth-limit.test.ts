import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { REDIS_URL, connectTestRedis, dropKeysAndClose } from './helpers/redis.js';
import { METRICS_TOKEN, sample } from './helpers/metrics.js';
import { ADMIN_TOKEN, startService, type TestService } from './helpers/service.js';

// ADMIN_AUTH_FAILURES_PER_MINUTE (src/http/bearer-guard.ts): an address may present that many
// wrong admin tokens in a burst, then one more every 60 / N seconds; past that every admin
// request from it is 429, the right token included.

const RUN_PREFIX = `test:admin-auth:${randomBytes(6).toString('hex')}:`;
let testNo = 0;
const prefix = () => `${RUN_PREFIX}${++testNo}:`;

interface Answer {
  status: number;
  body: { error?: string; message?: string };
  retryAfter: string | null;
}

/** GET `path` with `token` as the bearer (none: no Authorization header) and `headers`. */
async function bearerGet(t: TestService, path: string, token: string | null, headers: Record<string, string> = {}, scheme = 'Bearer'): Promise<Answer & { text: string }> {
  const r = await fetch(`${t.url}${path}`, { headers: token === null ? headers : { ...headers, authorization: `${scheme} ${token}` } });
  const text = await r.text();
  const body = r.headers.get('content-type')?.startsWith('application/json') ? (JSON.parse(text) as Answer['body']) : {};
  return { status: r.status, body, retryAfter: r.headers.get('retry-after'), text };
}

/** GET /admin/v1/games with `token` (none: no Authorization header), from `forwardedFor` when given. */
async function listGames(t: TestService, token: string | null, forwardedFor?: string): Promise<Answer> {
  const { status, body, retryAfter } = await bearerGet(t, '/admin/v1/games', token, forwardedFor ? { 'x-forwarded-for': forwardedFor } : {});
  return { status, body, retryAfter };
}

const WRONG = 'not-the-admin-token-0123456789';
const statuses = (answers: Answer[]) => answers.map((a) => a.status);

describe('wrong admin tokens per address (ADMIN_AUTH_FAILURES_PER_MINUTE)', () => {
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  it('the first N wrong tokens are 401; then 429 rate_limited with Retry-After, for the right token too', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 27, 8, 0, 0));
    t = await startService({ clock, env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '3' } });
    const wrong = [];
    for (let i = 0; i < 3; i++) wrong.push(await listGames(t, WRONG));
    expect(wrong.map((a) => [a.status, a.body.error, a.body.message])).toEqual(Array(3).fill([401, 'unauthorized', 'admin token is not valid']));
    const locked = await listGames(t, WRONG);
    // One failure comes back every 60 / 3 = 20 s; the clock has not moved.
    expect(locked).toEqual({ status: 429, body: { error: 'rate_limited', message: 'too many wrong admin tokens from this address; retry after 20 s' }, retryAfter: '20' });
    // A right guess must look like a wrong one now, or the 429s would not stop the guessing.
    expect((await listGames(t, ADMIN_TOKEN)).status).toBe(429);
    // No token at all is not a guess: 401 as ever (and not counted).
    expect([(await listGames(t, null)).status]).toEqual([401]);
    clock.advance(19_999);
    expect((await listGames(t, ADMIN_TOKEN)).retryAfter).toBe('1');
    clock.advance(1);
    // One failure's worth is back: the right token gets in, and does not use it up.
    expect((await listGames(t, ADMIN_TOKEN)).status).toBe(200);
    expect((await listGames(t, ADMIN_TOKEN)).status).toBe(200);
    expect(statuses([await listGames(t, WRONG), await listGames(t, WRONG)])).toEqual([401, 429]);
  });

  it('the right token, however often, uses nothing: the N wrong ones after it are still 401', async () => {
    t = await startService({ clock: new ManualClock(), env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '2' } });
    const right = await Promise.all(Array.from({ length: 30 }, () => listGames(t!, ADMIN_TOKEN)));
    expect(new Set(statuses(right))).toEqual(new Set([200]));
    expect(statuses([await listGames(t, WRONG), await listGames(t, WRONG), await listGames(t, WRONG)])).toEqual([401, 401, 429]);
  });

  it('wrong tokens sent in parallel get no more 401s than the bucket holds', async () => {
    t = await startService({ clock: new ManualClock(), env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '5' } });
    const answers = await Promise.all(Array.from({ length: 40 }, () => listGames(t!, WRONG)));
    expect(statuses(answers).filter((s) => s === 401)).toHaveLength(5);
    expect(statuses(answers).filter((s) => s === 429)).toHaveLength(35);
  });

  it('each address has its own bucket (TRUST_PROXY: the forwarded client address)', async () => {
    t = await startService({ clock: new ManualClock(), env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '1', TRUST_PROXY: '127.0.0.1' } });
    expect(statuses([await listGames(t, WRONG, '203.0.113.7'), await listGames(t, WRONG, '203.0.113.7')])).toEqual([401, 429]);
    expect((await listGames(t, ADMIN_TOKEN, '203.0.113.7')).status).toBe(429);
    expect((await listGames(t, ADMIN_TOKEN, '203.0.113.8')).status).toBe(200);
    expect((await listGames(t, WRONG, '203.0.113.8')).status).toBe(401);
  });

  it('an IPv6 address is limited by its /64: rotating through one block gets no more guesses', async () => {
    t = await startService({ clock: new ManualClock(), env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '2', TRUST_PROXY: '127.0.0.1' } });
    const inBlock = ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::9'];
    expect(statuses([await listGames(t, WRONG, inBlock[0]), await listGames(t, WRONG, inBlock[1]), await listGames(t, WRONG, inBlock[2])])).toEqual([401, 401, 429]);
    expect((await listGames(t, ADMIN_TOKEN, '2001:db8:1:2::77')).status).toBe(429);
    expect((await listGames(t, ADMIN_TOKEN, '2001:db8:1:3::1')).status).toBe(200);
  });

  it('0 turns the limit off: every wrong token is 401, and a request without a bearer token too', async () => {
    t = await startService({ clock: new ManualClock(), env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '0' } });
    const answers = await Promise.all(Array.from({ length: 30 }, () => listGames(t!, WRONG)));
    expect(new Set(statuses(answers))).toEqual(new Set([401]));
    expect((await listGames(t, null)).status).toBe(401);
    const basic = await fetch(`${t.url}/admin/v1/games`, { headers: { authorization: 'Basic YWRtaW46YWRtaW4=' } });
    expect(basic.status).toBe(401);
    expect((await listGames(t, ADMIN_TOKEN)).status).toBe(200);
  });

  it('Retry-After rounds the wait up: half a second after the lock-out it still says 20 s, not 19', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 27, 8, 0, 0));
    t = await startService({ clock, env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '3' } });
    for (let i = 0; i < 3; i++) await listGames(t, WRONG);
    clock.advance(500);
    expect((await listGames(t, ADMIN_TOKEN)).retryAfter).toBe('20');
  });

  it('the OpenAPI document lists 429 on every operator route', async () => {
    t = await startService();
    const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security?: Record<string, unknown>[]; responses: Record<string, unknown> }>>;
    };
    const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ route: `${method} ${path}`, op })));
    const admin = operations.filter(({ op }) => op.security?.some((s) => 'adminBearer' in s));
    expect(admin.length).toBeGreaterThan(20);
    expect(admin.filter(({ op }) => !('429' in op.responses)).map(({ route }) => route)).toEqual([]);
  });

  it('refusals are counted in combo_rate_limited_total{kind="admin-auth"}', async () => {
    t = await startService({ clock: new ManualClock(), env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '1' } });
    await listGames(t, WRONG);
    await listGames(t, WRONG);
    await listGames(t, ADMIN_TOKEN);
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).toMatch(/^combo_rate_limited_total\{kind="admin-auth"\} 2$/m);
  });
});

/** GET /metrics with `token` (none: no Authorization header). */
const scrape = (t: TestService, token: string | null, scheme = 'Bearer') => bearerGet(t, '/metrics', token, {}, scheme);

describe('wrong METRICS_TOKENs per address: the same limit, a bucket of its own', () => {
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  it('N wrong metrics tokens are 401, then 429 for the right one too; the operator API is not locked out by them, nor /metrics by wrong admin tokens', async () => {
    const clock = new ManualClock(Date.UTC(2026, 10, 27, 8, 0, 0));
    t = await startService({ clock, env: { METRICS_TOKEN, ADMIN_AUTH_FAILURES_PER_MINUTE: '2' } });
    const wrong = [await scrape(t, WRONG), await scrape(t, WRONG)];
    expect(wrong.map((a) => [a.status, a.body.error, a.body.message])).toEqual(Array(2).fill([401, 'unauthorized', 'metrics token is not valid']));
    expect(await scrape(t, WRONG)).toMatchObject({ status: 429, body: { error: 'rate_limited', message: 'too many wrong metrics tokens from this address; retry after 30 s' }, retryAfter: '30' });
    expect((await scrape(t, METRICS_TOKEN)).status).toBe(429);
    // No token is not a guess, and the other bucket is untouched.
    expect((await scrape(t, null)).body).toEqual({ error: 'unauthorized', message: 'Authorization: Bearer <METRICS_TOKEN> is required' });
    expect((await listGames(t, ADMIN_TOKEN)).status).toBe(200);
    expect(statuses([await listGames(t, WRONG), await listGames(t, WRONG), await listGames(t, WRONG)])).toEqual([401, 401, 429]);
    clock.advance(30_000);
    // One failure's worth back: the scraper gets in (the scheme in any case, as for ADMIN_TOKEN).
    const ok = await scrape(t, METRICS_TOKEN, 'bearer');
    expect(ok.status).toBe(200);
    expect(sample(ok.text, 'combo_rate_limited_total', { kind: 'metrics-auth' })).toBe(2);
    expect(sample(ok.text, 'combo_rate_limited_total', { kind: 'admin-auth' })).toBe(1);
  });

  it('0 turns it off for /metrics too', async () => {
    t = await startService({ clock: new ManualClock(), env: { METRICS_TOKEN, ADMIN_AUTH_FAILURES_PER_MINUTE: '0' } });
    const answers = await Promise.all(Array.from({ length: 20 }, () => scrape(t!, WRONG)));
    expect(new Set(statuses(answers))).toEqual(new Set([401]));
    expect((await scrape(t, METRICS_TOKEN)).status).toBe(200);
  });

  it('the OpenAPI document lists 429 on /metrics', async () => {
    t = await startService();
    const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    expect(Object.keys(doc.paths['/metrics']!.get!.responses)).toEqual(expect.arrayContaining(['200', '401', '429']));
  });
});

describe('wrong admin tokens with REDIS_URL: one bucket per address for every instance', () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = await connectTestRedis();
  });
  afterAll(() => dropKeysAndClose(redis, RUN_PREFIX));

  it('failures on one instance lock the address out of the other; the bucket refills and expires', async () => {
    const start = Date.UTC(2026, 10, 27, 8, 0, 0);
    const clock = new ManualClock(start);
    const env = { REDIS_URL, REDIS_KEY_PREFIX: prefix(), ADMIN_AUTH_FAILURES_PER_MINUTE: '2' };
    const a = await startService({ clock, env });
    const b = await startService({ clock, env, db: a.db });
    try {
      // The right token only peeks: nothing is written to Redis.
      expect((await listGames(a, ADMIN_TOKEN)).status).toBe(200);
      expect(await redis.keys(`${env.REDIS_KEY_PREFIX}*`)).toEqual([]);
      expect(statuses([await listGames(a, WRONG), await listGames(b, WRONG)])).toEqual([401, 401]);
      expect(await listGames(a, ADMIN_TOKEN)).toMatchObject({ status: 429, retryAfter: '30' });
      expect(await listGames(b, WRONG)).toMatchObject({ status: 429, retryAfter: '30' });
      const [key] = await redis.keys(`${env.REDIS_KEY_PREFIX}rl:admin-auth:*`);
      expect(key).toBeDefined();
      // A full bucket of 2 at one per 30 s: 60 s to fill, so the key lives that long and a bit.
      expect(await redis.pttl(key!)).toBeGreaterThan(60_000);
      expect(await redis.pttl(key!)).toBeLessThanOrEqual(64_000);
      // A refused wrong token, like the right one, writes nothing: both run only reads, so
      // neither answers faster than the other (and the bucket's refill is unchanged).
      const stored = await redis.hgetall(key!);
      await redis.pexpire(key!, 50_000);
      clock.advance(1_000);
      expect((await listGames(a, WRONG)).status).toBe(429);
      expect([await redis.hgetall(key!), (await redis.pttl(key!)) <= 50_000]).toEqual([stored, true]);
      clock.advance(-1_000);
      // Part of a failure back is not one: the right token is still refused, as a wrong one is,
      // and told the wait exactly as the in-memory buckets tell it (20 s, not 21).
      clock.advance(10_000);
      expect(await listGames(b, ADMIN_TOKEN)).toMatchObject({ status: 429, retryAfter: '20' });
      clock.advance(20_000);
      expect((await listGames(b, ADMIN_TOKEN)).status).toBe(200);
      expect(statuses([await listGames(b, WRONG), await listGames(a, WRONG)])).toEqual([401, 429]);
      const text = await (await fetch(`${a.url}/metrics`)).text();
      expect(text).toMatch(/^combo_rate_limited_total\{kind="admin-auth"\} 3$/m);
    } finally {
      await b.stop();
      await a.stop();
    }
  });
});
