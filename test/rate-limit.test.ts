import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { REDIS_BREAK_MS } from '../src/ratelimit/redis.js';
import { createPartner, partnerGet, queryUri } from './helpers/partners.js';
import { client } from './helpers/orders.js';
import { admin, createGame, orderBody, signed, startService, type Answer, type TestGame, type TestService } from './helpers/service.js';
import { HangingRelay } from './helpers/hanging-relay.js';
import { REDIS_URL, connectTestRedis } from './helpers/redis.js';

const enter = (t: TestService, g: TestGame) =>
  signed(t, g, 'POST', '/v1/server/enter-game', { combo_id: 'p1', session_id: `s-${randomBytes(4).toString('hex')}` });

function expectHeaders(a: Answer, name: string, q: number, r: number, tSeconds: number): void {
  expect(a.headers.get('ratelimit-policy')).toBe(`"${name}";q=${q};w=1`);
  expect(a.headers.get('ratelimit')).toBe(`"${name}";r=${r};t=${tSeconds}`);
}

describe('per-game token bucket, in memory', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 23, 8, 0, 0));
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ clock });
  });
  afterAll(async () => t?.stop());

  it('allows a burst of one second, then answers 429 with Retry-After and RateLimit headers', async () => {
    const g = await createGame(t, { rate_limit_per_second: 3 });
    const ok = [await enter(t, g), await enter(t, g), await enter(t, g)];
    expect(ok.map((a) => a.status)).toEqual([200, 200, 200]);
    expectHeaders(ok[0] as Answer, 'game', 3, 2, 1);
    expectHeaders(ok[2] as Answer, 'game', 3, 0, 1);
    const limited = await enter(t, g);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: 'rate_limited', message: expect.stringContaining('3 requests per second') });
    expect(limited.headers.get('content-type')).toMatch(/^application\/json/);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('x-trace-id')).toBeTruthy();
    expectHeaders(limited, 'game', 3, 0, 1);
  });

  it('refills at the game rate as time passes', async () => {
    const g = await createGame(t, { rate_limit_per_second: 4 });
    for (let i = 0; i < 4; i++) expect((await enter(t, g)).status).toBe(200);
    expect((await enter(t, g)).status).toBe(429);
    clock.advance(249); // 0.996 tokens: not yet
    expect((await enter(t, g)).status).toBe(429);
    clock.advance(1); // one token
    expect((await enter(t, g)).status).toBe(200);
    expect((await enter(t, g)).status).toBe(429);
    clock.advance(10_000); // refills to the burst (one second's worth), no more
    const burst = [];
    for (let i = 0; i < 5; i++) burst.push((await enter(t, g)).status);
    expect(burst).toEqual([200, 200, 200, 200, 429]);
  });

  it('keeps games apart and follows a changed rate_limit_per_second', async () => {
    const a = await createGame(t, { rate_limit_per_second: 1 });
    const b = await createGame(t, { rate_limit_per_second: 1 });
    expect((await enter(t, a)).status).toBe(200);
    expect((await enter(t, a)).status).toBe(429);
    expect((await enter(t, b)).status).toBe(200);
    expect((await admin(t, 'PATCH', `/admin/v1/games/${a.gameId}`, { rate_limit_per_second: 2 })).status).toBe(200);
    clock.advance(1000);
    const r = await enter(t, a);
    expect(r.status).toBe(200);
    expect(r.headers.get('ratelimit-policy')).toBe('"game";q=2;w=1');
  });

  it('checks the signature first (401 costs no token) and counts requests that fail later (400, 403)', async () => {
    const g = await createGame(t, { rate_limit_per_second: 2 });
    const forged = await enter(t, { ...g, secret: 'sk_wrong' });
    expect(forged.status).toBe(401);
    expect(forged.headers.get('ratelimit')).toBeNull();
    const bad = await signed(t, g, 'POST', '/v1/server/enter-game', { combo_id: '' });
    expect(bad.status).toBe(400);
    expectHeaders(bad, 'game', 2, 1, 1);
    expect((await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { iap_enabled: false })).status).toBe(200);
    const off = await signed(t, g, 'POST', '/v1/server/create-order', {});
    expect(off.status).toBe(403);
    expectHeaders(off, 'game', 2, 0, 1);
    // Empty bucket: 429 comes before the caller-state check (PROTOCOL 2 order: 401, 429, 403, 400).
    expect((await signed(t, g, 'POST', '/v1/server/create-order', {})).status).toBe(429);
    expect((await enter(t, { ...g, secret: 'sk_wrong' })).status).toBe(401);
  });

  it('limits each partner at its own rate_limit_per_second', async () => {
    const g = await createGame(t);
    const p = await createPartner(t, [g.gameId], { rate_limit_per_second: 2 });
    const ask = () => partnerGet(t, p, queryUri(g.gameId, 'nobody'));
    const first = await ask();
    expect(first.status).toBe(404); // binding_not_found: a business answer still takes a token
    expectHeaders(first, 'partner', 2, 1, 1);
    expect((await ask()).status).toBe(404);
    const limited = await ask();
    expect(limited.status).toBe(429);
    expect(limited.body.error).toBe('rate_limited');
    expect(limited.headers.get('retry-after')).toBe('1');
    expect((await enter(t, g)).status).toBe(200); // the game's own bucket is separate
    clock.advance(500);
    expect((await ask()).status).toBe(404);
  });

  it('does not limit the operator API or health checks', async () => {
    const r = await admin(t, 'GET', '/admin/v1/games/nope');
    expect(r.headers.get('ratelimit')).toBeNull();
    const h = await fetch(`${t.url}/healthz`);
    expect(h.headers.get('ratelimit')).toBeNull();
  });
});

describe('client purchase API, per IP', () => {
  const clock = new ManualClock();
  const mount = (s: { app: import('fastify').FastifyInstance }) => {
    // A stand-in route with the client API's auth kind (the real ones live in the payments domain).
    s.app.post('/v1/client/__rate-limit-probe', { config: { auth: 'client' }, handler: async () => ({}) });
  };
  const probe = (t: TestService, headers: Record<string, string> = {}) =>
    fetch(`${t.url}/v1/client/__rate-limit-probe`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });

  it('limits each IP at CLIENT_RATE_LIMIT_PER_SECOND; X-Forwarded-For is ignored without TRUST_PROXY', async () => {
    const t = await startService({ clock, env: { CLIENT_RATE_LIMIT_PER_SECOND: '2' }, beforeListen: mount });
    try {
      const a = await probe(t);
      expect(a.status).toBe(200);
      expect(a.headers.get('ratelimit-policy')).toBe('"ip";q=2;w=1');
      expect((await probe(t, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(200);
      const c = await probe(t, { 'x-forwarded-for': '203.0.113.8' });
      expect(c.status).toBe(429);
      expect(c.headers.get('retry-after')).toBe('1');
      expect(await c.json()).toMatchObject({ error: 'rate_limited' });
      clock.advance(500);
      expect((await probe(t)).status).toBe(200);
    } finally {
      await t.stop();
    }
  });

  it('with TRUST_PROXY, each forwarded client address has its own bucket', async () => {
    const t = await startService({ clock, env: { CLIENT_RATE_LIMIT_PER_SECOND: '1', TRUST_PROXY: '127.0.0.1' }, beforeListen: mount });
    try {
      expect((await probe(t, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(200);
      expect((await probe(t, { 'x-forwarded-for': '203.0.113.7' })).status).toBe(429);
      expect((await probe(t, { 'x-forwarded-for': '203.0.113.8' })).status).toBe(200);
    } finally {
      await t.stop();
    }
  });
});

describe('client purchase API, per order token', () => {
  // PROTOCOL 10: per token as well as per IP. One bucket per order, whatever the token's secret
  // part: guesses at one order's token from many addresses share it.
  const clock = new ManualClock();
  let t: TestService;
  let game: TestGame;
  beforeAll(async () => {
    t = await startService({ clock, env: { CLIENT_RATE_LIMIT_PER_SECOND: '2', TRUST_PROXY: '127.0.0.1' } });
    game = await createGame(t);
  });
  afterAll(async () => t?.stop());

  const newOrder = async () => (await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).body.order_token as string;
  let ip = 0;
  /** Each call from its own client address: the per-IP bucket never runs out. */
  const from = () => ({ 'x-forwarded-for': `203.0.113.${++ip}` });
  const view = (token: string) => client(t, '/v1/client/order', { order_token: token }, from());

  it.each([
    ['POST /v1/client/order', (token: string) => view(token)],
    ['POST /v1/client/pay', (token: string) => client(t, '/v1/client/pay', { order_token: token, channel: 'sandbox' }, from())],
    ['GET /checkout/<order_token>', (token: string) => fetch(`${t.url}/checkout/${token}`, { headers: from() }).then((r) => ({ status: r.status, headers: r.headers }))],
  ])('%s: 429 past the token\'s rate from any address; other orders unaffected', async (_name, call) => {
    const token = await newOrder();
    const answers = [await call(token), await call(token), await call(token)];
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    // The IP bucket it drew from first is listed too (a refusal by the second bucket).
    expect(answers[2]!.headers.get('ratelimit-policy')).toBe('"ip";q=2;w=1, "token";q=2;w=1');
    expect(answers[2]!.headers.get('retry-after')).toBe('1');
    expect((await view(await newOrder())).status).toBe(200);
    clock.advance(1000);
    expect((await view(token)).status).toBe(200);
  });

  it('a 200 carries both buckets it drew from, per IP and per token, so the emptier one is seen', async () => {
    const token = await newOrder();
    const same = { 'x-forwarded-for': '198.51.100.9' };
    const first = await client(t, '/v1/client/order', { order_token: token }, same);
    expect(first.status).toBe(200);
    expect(first.headers.get('ratelimit-policy')).toBe('"ip";q=2;w=1, "token";q=2;w=1');
    expect(first.headers.get('ratelimit')).toMatch(/^"ip";r=1;t=\d+, "token";r=1;t=\d+$/);
    const other = await client(t, '/v1/client/order', { order_token: await newOrder() }, same);
    expect(other.headers.get('ratelimit')).toMatch(/^"ip";r=0;t=\d+, "token";r=1;t=\d+$/);
    clock.advance(1000);
  });

  it('a 429 of the token bucket still lists the IP bucket it drew from first', async () => {
    const token = await newOrder();
    const answers = [];
    for (const ip of ['198.51.100.21', '198.51.100.22', '198.51.100.23']) answers.push(await client(t, '/v1/client/order', { order_token: token }, { 'x-forwarded-for': ip }));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 429]);
    const refused = answers[2]!;
    expect(refused.headers.get('ratelimit-policy')).toBe('"ip";q=2;w=1, "token";q=2;w=1');
    expect(refused.headers.get('ratelimit')).toMatch(/^"ip";r=1;t=\d+, "token";r=0;t=\d+$/);
    clock.advance(1000);
  });

  it('forged tokens of one order draw from that order\'s bucket', async () => {
    const token = await newOrder();
    const forged = token.replace(/_[0-9A-Za-z]{32}$/, `_${'x'.repeat(32)}`);
    expect((await view(forged)).status).toBe(401);
    expect((await view(forged)).status).toBe(401);
    expect((await view(forged)).status).toBe(429);
    expect((await view(token)).status).toBe(429);
    clock.advance(1000);
  });
});

describe('shared by all instances through Redis', () => {
  beforeAll(async () => {
    (await connectTestRedis()).disconnect();
  });

  it('two service instances on one database and one Redis draw from one bucket', async () => {
    const clock = new ManualClock();
    const env = { REDIS_URL, REDIS_KEY_PREFIX: `test:${randomBytes(6).toString('hex')}:` };
    const secretsKey = randomBytes(32); // instances of one deployment share SECRETS_KEY
    const a = await startService({ clock, env, secretsKey });
    const b = await startService({ clock, env, secretsKey, db: a.db });
    try {
      const g = await createGame(a, { rate_limit_per_second: 4 });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await enter(i % 2 ? b : a, g)).status);
      expect(statuses).toEqual([200, 200, 200, 200]);
      const la = await enter(a, g);
      const lb = await enter(b, g);
      expect([la.status, lb.status]).toEqual([429, 429]);
      expect(lb.headers.get('retry-after')).toBe('1');
      expectHeaders(lb, 'game', 4, 0, 1);
      clock.advance(250);
      expect((await enter(b, g)).status).toBe(200);
      expect((await enter(a, g)).status).toBe(429);
    } finally {
      await b.stop();
      await a.stop();
    }
  });

  it('a hung Redis costs one command time-out, not one per request: then it is not asked for a while', async () => {
    const relay = await new HangingRelay(new URL(REDIS_URL)).start();
    const relayUrl = `redis://127.0.0.1:${relay.port}`;
    const clock = new ManualClock();
    const t = await startService({ clock, env: { REDIS_URL: relayUrl, REDIS_KEY_PREFIX: `test:${randomBytes(6).toString('hex')}:` } });
    try {
      const g = await createGame(t, { rate_limit_per_second: 100 });
      expect((await enter(t, g)).headers.get('ratelimit')).not.toBeNull();
      relay.hang();
      // This one waits for its command's time-out, then is let through (fail open).
      const first = await enter(t, g);
      expect([first.status, first.headers.get('ratelimit')]).toEqual([200, null]);
      const asked = relay.heldBytes;
      expect(asked).toBeGreaterThan(0);
      // The next ones are let through at once: Redis is not asked.
      for (let i = 0; i < 3; i++) expect((await enter(t, g)).status).toBe(200);
      expect(relay.heldBytes).toBe(asked);
      // A break later, Redis (answering again) is asked and limits again.
      relay.resume();
      clock.advance(REDIS_BREAK_MS);
      expect((await enter(t, g)).headers.get('ratelimit')).not.toBeNull();
    } finally {
      await t.stop();
      await relay.close();
    }
  });

  it('fails open with a warning when Redis is unreachable', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const t = await startService({ env: { REDIS_URL: 'redis://127.0.0.1:1', LOG_LEVEL: 'warn' }, logDestination: sink });
    try {
      const g = await createGame(t, { rate_limit_per_second: 1 });
      const answers = [await enter(t, g), await enter(t, g), await enter(t, g)];
      expect(answers.map((x) => x.status)).toEqual([200, 200, 200]);
      expect(answers[2]?.headers.get('ratelimit')).toBeNull();
      expect(lines.join('')).toContain('fail open');
    } finally {
      await t.stop();
    }
  });
});

