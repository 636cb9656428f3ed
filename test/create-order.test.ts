import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { createTestDatabase, TEST_DB } from './helpers/db.js';
import { admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

const CREATE = '/v1/server/create-order';
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => t?.stop());

describe('create-order', () => {
  let game: TestGame;
  beforeAll(async () => {
    game = await createGame(t);
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/gem_120`, { name: '120 gems', price: 1200, currency: 'CNY' })).status).toBe(200);
  });

  it('creates an order and answers order_id, order_token, expires_at', async () => {
    const before = Math.floor(Date.now() / 1000);
    const r = await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ quantity: 2, context: 'ctx', meta: { role_name: '剑客·小明', role_level: 12 } }));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.headers.get('x-trace-id')).toBeTruthy();
    expect(Object.keys(r.body).sort()).toEqual(['expires_at', 'order_id', 'order_token']);
    expect(r.body.order_id).toMatch(/^\d{1,20}$/);
    expect(r.body.order_token.length).toBeLessThanOrEqual(1024);
    expect(r.body.expires_at).toBeGreaterThanOrEqual(before + 1800);
    expect(r.body.expires_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 1800);
  });

  it('is served under /v3/server too (published SDK path)', async () => {
    const r = await signed(t, game, 'POST', '/v3/server/create-order', orderBody());
    expect(r.status).toBe(200);
  });

  it('treats optional "" as absent and accepts an empty meta (Go SDK)', async () => {
    const r = await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ context: '', meta: { zone_id: '' } }));
    expect(r.status).toBe(200);
  });

  it('replays the same order for the same request, and 422 for other parameters', async () => {
    const body = orderBody();
    const a = await signed(t, game, 'POST', '/v1/server/create-order', body);
    const b = await signed(t, game, 'POST', '/v1/server/create-order', { ...body, quantity: 1 });
    expect(a.status).toBe(200);
    expect(b.body).toEqual(a.body);
    const c = await signed(t, game, 'POST', '/v1/server/create-order', { ...body, quantity: 3 });
    expect(c.status).toBe(422);
    expect(c.body.error).toBe('duplicate_reference_id');
  });

  it('replays for the same validated parameters: defaults, "" as absent, meta key order', async () => {
    const body = orderBody({ quantity: 1, meta: { role_id: 'r1', zone_id: 'z1' } });
    const a = await signed(t, game, 'POST', CREATE, body);
    expect(a.status).toBe(200);
    const same = [
      { ...body, meta: { zone_id: 'z1', role_id: 'r1' } },
      { ...body, quantity: undefined, context: '' },
      { ...body, meta: { zone_id: 'z1', role_id: 'r1', server_id: '' } },
    ];
    for (const b of same) expect((await signed(t, game, 'POST', CREATE, b)).body).toEqual(a.body);
    // Stored in one fixed field order, whatever the request's: what a later replay compares.
    const stored = await t.service.database.db.selectFrom('orders').select('meta').where('order_id', '=', a.body.order_id).executeTakeFirstOrThrow();
    expect(stored.meta).toBe('{"zone_id":"z1","role_id":"r1"}');
    // No meta at all and an empty meta are the same parameters too.
    const bare = orderBody();
    const c = await signed(t, game, 'POST', CREATE, bare);
    expect((await signed(t, game, 'POST', CREATE, { ...bare, meta: {} })).body).toEqual(c.body);
  });

  it.each([
    ['combo_id', { combo_id: '1234567891' }],
    ['product_id', { product_id: 'gem_120' }],
    ['platform', { platform: 'android' }],
    ['notify_url', { notify_url: 'https://game.example.com/notify2' }],
    ['quantity', { quantity: 2 }],
    ['a meta field', { meta: { role_id: 'r1', role_level: 3 } }],
    ['meta, by a field added', { meta: { role_id: 'r1', role_level: 2, zone_id: 'z' } }],
    ['meta, by a field removed', { meta: { role_id: 'r1' } }],
    ['meta, left out', { meta: undefined }],
    ['context, added', { context: 'c1' }],
  ])('answers 422 duplicate_reference_id when %s differs', async (_name, change) => {
    const base = orderBody({ meta: { role_id: 'r1', role_level: 2 } });
    expect((await signed(t, game, 'POST', CREATE, base)).status).toBe(200);
    const r = await signed(t, game, 'POST', CREATE, { ...base, ...change });
    expect(r.status).toBe(422);
    expect(r.body.error).toBe('duplicate_reference_id');
  });

  it('answers 422 when a context is dropped, and replays the order with it', async () => {
    const body = orderBody({ context: 'c1' });
    const a = await signed(t, game, 'POST', CREATE, body);
    expect((await signed(t, game, 'POST', CREATE, { ...body, context: undefined })).status).toBe(422);
    expect((await signed(t, game, 'POST', CREATE, body)).body).toEqual(a.body);
  });

  it('creates exactly one order for 24 identical concurrent requests', async () => {
    const body = orderBody();
    const answers = await Promise.all(Array.from({ length: 24 }, () => signed(t, game, 'POST', '/v1/server/create-order', body)));
    expect(answers.map((a) => a.status)).toEqual(Array(24).fill(200));
    expect(new Set(answers.map((a) => JSON.stringify(a.body))).size).toBe(1);
    const count = await t.service.database.db
      .selectFrom('orders')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('game_id', '=', game.gameId)
      .where('reference_id', '=', body.reference_id as string)
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(1);
  });

  // On PostgreSQL a recorded player's orders wait for a row lock: the waiting copies of one
  // request must find the order committed meanwhile, not count it against the minor's limit.
  it('identical concurrent requests for a minor one order from the monthly limit all answer that order', async () => {
    const g = await createGame(t);
    expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/products/p50`, { name: '50 CNY', price: 5000, currency: 'CNY' })).status).toBe(200);
    const twelveYearsAgo = `${new Date().getUTCFullYear() - 12}-01-01`;
    expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/players/kid`, { birth_date: twelveYearsAgo })).status).toBe(200);
    // 150 of the month's 200 CNY reserved: room for exactly one more 50 CNY order.
    for (let i = 0; i < 3; i++) expect((await signed(t, g, 'POST', CREATE, orderBody({ combo_id: 'kid', product_id: 'p50' }))).status).toBe(200);
    for (let round = 0; round < 4; round++) {
      const body = orderBody({ combo_id: 'kid', product_id: 'p50' });
      const answers = await Promise.all(Array.from({ length: 6 }, () => signed(t, g, 'POST', CREATE, body)));
      expect(answers.map((a) => `${a.status} ${a.body.error ?? ''}`)).toEqual(Array(6).fill('200 '));
      expect(new Set(answers.map((a) => a.body.order_id)).size).toBe(1);
      // Frees the allowance for the next round.
      expect((await admin(t, 'POST', `/admin/v1/orders/${answers[0]!.body.order_id}/cancel`, {})).status).toBe(200);
    }
    const over = await signed(t, g, 'POST', CREATE, orderBody({ combo_id: 'kid', product_id: 'p50' }));
    expect(over.status).toBe(200);
    const refused = await signed(t, g, 'POST', CREATE, orderBody({ combo_id: 'kid', product_id: 'p50' }));
    expect([refused.status, refused.body.error]).toEqual([403, 'recharge_limit_exceeded']);
  });

  it('answers 403 game_iap_disabled when IAP is off, before checking parameters', async () => {
    const g = await createGame(t);
    expect((await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { iap_enabled: false })).status).toBe(200);
    const r = await signed(t, g, 'POST', '/v1/server/create-order', { reference_id: 'x' });
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('game_iap_disabled');
  });

  // PROTOCOL 3: a reference identifies one order forever. A repeat gets the original whatever the
  // operator changed since; a new reference meets the checks a new order meets.
  it('a replay after operator changes gets the original order: price, ban, a minor limit, the product inactive, IAP off', async () => {
    const g = await createGame(t);
    const body = orderBody({ combo_id: 'replayer-1' });
    const replay = () => signed(t, g, 'POST', CREATE, body);
    const first = await replay();
    expect(first.status, first.text).toBe(200);
    const product = (over: Record<string, unknown>) => admin(t, 'PUT', `/admin/v1/games/${g.gameId}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY', ...over });

    expect((await product({ price: 999 })).status).toBe(200);
    expect(await replay()).toMatchObject({ status: 200, body: first.body });
    expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/players/replayer-1`, { banned: true })).status).toBe(200);
    expect(await replay()).toMatchObject({ status: 200, body: first.body });
    // A child under 8 may not pay at all (PROTOCOL 12): a new order is refused, the retry is not.
    const fiveYearsAgo = new Date(Date.now() - 5 * 365 * 86_400_000).toISOString().slice(0, 10);
    expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/players/replayer-1`, { banned: false, birth_date: fiveYearsAgo })).status).toBe(200);
    const fresh = await signed(t, g, 'POST', CREATE, orderBody({ combo_id: 'replayer-1' }));
    expect([fresh.status, fresh.body.error]).toEqual([403, 'recharge_limit_exceeded']);
    expect(await replay()).toMatchObject({ status: 200, body: first.body });

    expect((await product({ active: false })).status).toBe(200);
    expect(await replay()).toMatchObject({ status: 200, body: first.body });
    // Not a repeat (other parameters): the refusal, which comes before 422 (PROTOCOL 2).
    const other = await signed(t, g, 'POST', CREATE, { ...body, quantity: 2 });
    expect([other.status, other.body.error]).toEqual([400, 'invalid_request']);
    const inactive = await signed(t, g, 'POST', CREATE, orderBody());
    expect([inactive.status, inactive.body.error]).toEqual([400, 'invalid_request']);
    expect(inactive.body.message).toContain('product_id');

    expect((await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { iap_enabled: false })).status).toBe(200);
    expect(await replay()).toMatchObject({ status: 200, body: first.body });
    expect((await product({})).status).toBe(200);
    expect(await replay()).toMatchObject({ status: 200, body: first.body });
    const otherOff = await signed(t, g, 'POST', CREATE, { ...body, quantity: 2 });
    expect([otherOff.status, otherOff.body.error]).toEqual([403, 'game_iap_disabled']);
    const off = await signed(t, g, 'POST', CREATE, orderBody());
    expect([off.status, off.body.error]).toEqual([403, 'game_iap_disabled']);
    // A known reference with invalid parameters is no repeat: caller state (403) before 400.
    const bad = await signed(t, g, 'POST', CREATE, { ...body, quantity: 0 });
    expect([bad.status, bad.body.error]).toEqual([403, 'game_iap_disabled']);
    const unparsable = await signed(t, g, 'POST', CREATE, '{"reference_id":');
    expect([unparsable.status, unparsable.body.error]).toEqual([403, 'game_iap_disabled']);
    expect((await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { iap_enabled: true })).status).toBe(200);
    expect(await replay()).toMatchObject({ status: 200, body: first.body });
    const rows = await t.service.database.db.selectFrom('orders').select(['order_id', 'amount']).where('game_id', '=', g.gameId).execute();
    expect(rows).toEqual([{ order_id: first.body.order_id, amount: 600 }]);
  });

  it('rejects an unknown product with invalid_request naming product_id', async () => {
    const r = await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ product_id: 'nope' }));
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ error: 'invalid_request' });
    expect(r.body.message).toContain('product_id');
  });
});

describe('in production, a URL on a literal internal address', () => {
  // Production never calls an internal address (ALLOW_PRIVATE_NOTIFY_URLS unset): a notify_url
  // or gm_url whose host shows it is refused when given, not retried for days. Host names are
  // judged at each delivery, after DNS (test/notifications.test.ts, "outbound safety").
  let p: TestService;
  let game: TestGame;
  beforeAll(async () => {
    p = await startService({ env: { NODE_ENV: 'production', ALLOW_PRIVATE_NOTIFY_URLS: '0' } });
    game = await createGame(p);
  });
  afterAll(async () => p?.stop());

  it.each(['http://127.0.0.1:8080/notify', 'http://10.0.0.5/notify', 'http://[::1]/notify', 'http://2130706433/notify', 'http://localhost:9000/cb'])(
    'create-order answers 400 naming notify_url for %s, and stores nothing',
    async (url) => {
      const body = orderBody({ notify_url: url });
      const r = await signed(p, game, 'POST', CREATE, body);
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_request');
      expect(r.body.message).toMatch(/^notify_url points to an internal address/);
      const rows = await p.service.database.db.selectFrom('orders').select('order_id').where('reference_id', '=', body.reference_id as string).execute();
      expect(rows).toEqual([]);
    },
  );

  it('create-order takes a public literal and a host name', async () => {
    for (const url of ['http://8.8.8.8/notify', 'https://game.example.com/notify']) {
      expect((await signed(p, game, 'POST', CREATE, orderBody({ notify_url: url }))).status).toBe(200);
    }
  });

  it('the games API answers 400 naming gm_url on create and patch, and changes nothing', async () => {
    const created = await admin(p, 'POST', '/admin/v1/games', { game_id: `g_int_${Date.now()}`, name: 'x', gm_url: 'http://192.168.1.10/gm' });
    expect(created.status).toBe(400);
    expect(created.body.message).toMatch(/^gm_url points to an internal address \(192\.168\.1\.10\)/);
    const patched = await admin(p, 'PATCH', `/admin/v1/games/${game.gameId}`, { gm_url: 'http://[fd00::1]:8080/gm' });
    expect(patched.status).toBe(400);
    expect(patched.body.message).toMatch(/^gm_url points to an internal address/);
    expect((await admin(p, 'GET', `/admin/v1/games/${game.gameId}`)).body.gm_url).toBeNull();
    expect((await admin(p, 'PATCH', `/admin/v1/games/${game.gameId}`, { gm_url: 'https://gm.example.com/gm' })).status).toBe(200);
  });

  it('with ALLOW_PRIVATE_NOTIFY_URLS=1, both are taken', async () => {
    const q = await startService({ env: { NODE_ENV: 'production', ALLOW_PRIVATE_NOTIFY_URLS: '1' } });
    try {
      const g = await createGame(q, { gm_url: 'http://10.1.2.3/gm' });
      expect((await signed(q, g, 'POST', CREATE, orderBody({ notify_url: 'http://127.0.0.1:8080/notify' }))).status).toBe(200);
    } finally {
      await q.stop();
    }
  });
});

describe('create-order when the order cannot be written', () => {
  // A fault in the database itself (a trigger refusing one order's row) stands in for a failed
  // write, e.g. a full disk. On SQLite the creating job runs without a savepoint in a batch
  // shared with other orders (TransactionOptions.noSavepoint): SQLite undoes the failed
  // statement alone. On PostgreSQL the statement fails whole.
  const FAULT = TEST_DB === 'sqlite'
    ? [sql`create trigger refuse_boom before insert on orders when new.reference_id like 'boom-%'
           begin select raise(abort, 'order write refused'); end`]
    : [
        sql`create function refuse_boom() returns trigger language plpgsql as $$ begin
              if new.reference_id like 'boom-%' then raise exception 'order write refused'; end if;
              return new; end $$`,
        sql`create trigger refuse_boom before insert on orders for each row execute function refuse_boom()`,
      ];
  const CLEAR = TEST_DB === 'sqlite' ? [sql`drop trigger refuse_boom`] : [sql`drop trigger refuse_boom on orders`, sql`drop function refuse_boom()`];

  it('stores nothing of it, keeps the orders created beside it, and a retry succeeds', async () => {
    const game = await createGame(t);
    const db = t.service.database.db;
    for (const q of FAULT) await q.execute(db);
    const failing = orderBody({ reference_id: `boom-${Date.now()}` });
    let answers;
    try {
      answers = await Promise.all([orderBody(), failing, orderBody()].map((b) => signed(t, game, 'POST', '/v1/server/create-order', b)));
    } finally {
      for (const q of CLEAR) await q.execute(db);
    }
    expect(answers.map((a) => a.status)).toEqual([200, 500, 200]);
    expect(answers[1]!.body.error).toBe('internal_error');
    const orders = await db.selectFrom('orders').select(['order_id', 'reference_id']).where('game_id', '=', game.gameId).execute();
    expect(orders.map((o) => o.order_id).sort()).toEqual([answers[0]!.body.order_id, answers[2]!.body.order_id].sort());
    // One row per order: its creation is recorded by the row itself, not by an event.
    const events = await db.selectFrom('order_events').select('order_id').where('order_id', 'in', orders.map((o) => o.order_id)).execute();
    expect(events).toEqual([]);

    const retry = await signed(t, game, 'POST', '/v1/server/create-order', failing);
    expect(retry.status).toBe(200);
    expect(await db.selectFrom('orders').select('reference_id').where('order_id', '=', retry.body.order_id).execute()).toEqual([{ reference_id: failing.reference_id }]);
  });
});

describe('two instances given one NODE_ID', () => {
  // Same node id, same millisecond: both hand out the same order id (as would one instance
  // restarted after its clock stepped back). The second order takes the next id, not a 500.
  it('the second order to get a taken id is created under the next one, with a warning', async () => {
    const db = await createTestDatabase();
    // Ahead of the wall clock, which other ids (prefixed ones) follow: order ids follow this.
    const clock = new ManualClock(Date.now() + 60_000);
    const env = { NODE_ID: '7', LOG_LEVEL: 'warn' };
    const secretsKey = randomBytes(32);
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const a = await startService({ db, clock, env, secretsKey });
    const b = await startService({ db, clock, env, secretsKey, logDestination: sink });
    try {
      const game = await createGame(a);
      const first = await signed(a, game, 'POST', CREATE, orderBody());
      const second = await signed(b, game, 'POST', CREATE, orderBody());
      expect([first.status, second.status]).toEqual([200, 200]);
      expect(second.body.order_id).not.toBe(first.body.order_id);
      const rows = await a.service.database.db.selectFrom('orders').select(['order_id', 'reference_id']).where('game_id', '=', game.gameId).orderBy('order_id').execute();
      expect(rows).toHaveLength(2);
      expect(rows.map((r) => r.order_id)).toEqual([first.body.order_id, second.body.order_id].sort());
      const warning = lines.map((l) => JSON.parse(l)).find((l) => l.msg.includes('NODE_ID'));
      expect(warning).toMatchObject({ level: 40, order_id: first.body.order_id, node_id: 7 });
      // Its token opens it: the order answered is the one stored.
      const view = await fetch(`${b.url}/v1/client/order`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ order_token: second.body.order_token }),
      });
      expect(view.status).toBe(200);
      expect(((await view.json()) as { order_id: string }).order_id).toBe(second.body.order_id);
      // The other one keeps handing out the following ids (a burst): the next id is taken too,
      // and the one after; a collision jumps to a random point instead of walking into them.
      for (let i = 0; i < 5; i++) expect((await signed(a, game, 'POST', CREATE, orderBody())).status).toBe(200);
      const third = await signed(b, game, 'POST', CREATE, orderBody());
      expect(third.status, third.text).toBe(200);
    } finally {
      await b.stop();
      await a.stop();
      await db.drop();
    }
  });
});

describe('enter-game / leave-game', () => {
  let game: TestGame;
  beforeAll(async () => {
    game = await createGame(t);
  });
  const enter = (b: object) => signed(t, game, 'POST', '/v1/server/enter-game', b);
  const leave = (b: object) => signed(t, game, 'POST', '/v1/server/leave-game', b);

  it('opens, retries, closes, and refuses reuse', async () => {
    const s = { combo_id: 'p1', session_id: 'sess-1' };
    expect((await enter(s)).body).toEqual({});
    expect((await enter(s)).status).toBe(200);
    expect((await enter({ ...s, combo_id: 'p2' })).status).toBe(400);
    expect((await leave({ ...s, combo_id: 'p2' })).status).toBe(400);
    expect((await leave(s)).status).toBe(200);
    expect((await leave(s)).status).toBe(200);
    const again = await enter(s);
    expect(again.status).toBe(400);
    expect(again.body.error).toBe('invalid_request');
  });

  it('answers 20 identical enter-game reports sent at once with 200 and stores one session', async () => {
    const s = { combo_id: 'p4', session_id: 'sess-parallel' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => enter(s)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const rows = await t.service.database.db.selectFrom('sessions').selectAll().where('game_id', '=', game.gameId).where('session_id', '=', s.session_id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ combo_id: 'p4', left_at: null });
    // The same session id for another player, at once, from 10 callers: all refused.
    const others = await Promise.all(Array.from({ length: 10 }, () => enter({ ...s, combo_id: 'p5' })));
    expect(others.map((a) => a.status)).toEqual(Array(10).fill(400));
  });

  it('settles enter and leave reports for one session sent at once: every leave 200, the session closed', async () => {
    const s = { combo_id: 'p6', session_id: 'sess-race' };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? leave(s) : enter(s))));
    expect(answers.filter((_, i) => i % 2).map((a) => a.status)).toEqual(Array(10).fill(200));
    // An enter that comes after a leave finds the session closed (400); before it, 200.
    for (const a of answers.filter((_, i) => i % 2 === 0)) expect([200, 400]).toContain(a.status);
    const rows = await t.service.database.db.selectFrom('sessions').selectAll().where('game_id', '=', game.gameId).where('session_id', '=', s.session_id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.left_at).not.toBeNull();
  });

  it('stores a leave without enter', async () => {
    expect((await leave({ combo_id: 'p3', session_id: 'sess-orphan' })).status).toBe(200);
    const row = await t.service.database.db
      .selectFrom('sessions')
      .selectAll()
      .where('game_id', '=', game.gameId)
      .where('session_id', '=', 'sess-orphan')
      .executeTakeFirstOrThrow();
    expect(row.entered_at).toBeNull();
    expect(row.left_at).not.toBeNull();
  });
});
