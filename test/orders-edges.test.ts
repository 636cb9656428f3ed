import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { IdGenerator } from '../src/lib/ids.js';
import { OrderLifecycle } from '../src/orders/lifecycle.js';
import { OrderStore } from '../src/orders/store.js';
import { OrderSweeper } from '../src/orders/sweeper.js';
import { authorizationHeader, computeSignature } from '../src/signing/signer.js';
import { createOrder, eventsOf, orderRow, pay, paymentsOf, statusOf } from './helpers/orders.js';
import { createPartner, queryUri, type TestPartner } from './helpers/partners.js';
import { head, rawRequest } from './helpers/raw.js';
import { Receiver, until } from './helpers/receiver.js';
import { admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * Edges of the order flow and of the HTTP pipeline that nothing else pins: boundaries (exactly
 * at expires_at, exactly BODY_LIMIT bytes, exactly `limit` games, exactly 8 taken ids) and the
 * values that only show end to end (an order without context, a header's letter case).
 */
const CREATE = '/v1/server/create-order';
const BODY_LIMIT = 64 * 1024;

let t: TestService;
let clock: ManualClock;
let game: TestGame;
const keys = new Map<string, string[]>();
let receiver: Receiver;

beforeAll(async () => {
  clock = new ManualClock(Date.now());
  // The sweeper stays out of the way: an order at exactly expires_at must reach the payment
  // still `created` (the tests that want a sweep run one themselves).
  t = await startService({ clock, env: { SWEEP_INTERVAL_MS: '600000' } });
  game = await createGame(t, { order_ttl_seconds: 60 });
  keys.set(game.gameId, [game.secret]);
  receiver = await new Receiver({ keys, now: () => clock.now() }).start();
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

describe('PROTOCOL 1: a Timestamp that Date.UTC would roll over is unparsable (401)', () => {
  let s: TestService;
  let sclock: ManualClock;
  let g: TestGame;
  beforeAll(async () => {
    sclock = new ManualClock(Date.now());
    s = await startService({ clock: sclock });
    g = await createGame(s);
  });
  afterAll(async () => s?.stop());

  /** create-order signed with exactly `ts` (its signature correct for that string). */
  async function createWith(ts: string) {
    const raw = JSON.stringify(orderBody());
    const sig = computeSignature(g.secret, 'POST', CREATE, ts, raw);
    const res = await fetch(s.url + CREATE, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `SEAYOO-HMAC-SHA256 Game=${g.gameId},Timestamp=${ts},Signature=${sig}` },
      body: raw,
    });
    return { status: res.status, body: (await res.json()) as { error: string; message: string } };
  }

  it.each([
    // [timestamp, the time Date.UTC rolls it to, the valid spelling of that time]
    ['second 60', '20261122T093060Z', Date.UTC(2026, 10, 22, 9, 31, 0), '20261122T093100Z'],
    ['day 00', '20261100T093000Z', Date.UTC(2026, 9, 31, 9, 30, 0), '20261031T093000Z'],
    ['month 00', '20260022T093000Z', Date.UTC(2025, 11, 22, 9, 30, 0), '20251222T093000Z'],
  ])('%s: %s -> 401 invalid_signature, though the server clock is at the rolled-over time', async (_n, ts, rolled, valid) => {
    sclock.set(rolled);
    // The same request with the valid spelling of that instant is accepted: only the spelling differs.
    expect((await createWith(valid)).status).toBe(200);
    const r = await createWith(ts);
    expect([r.status, r.body.error]).toEqual([401, 'invalid_signature']);
    expect(r.body.message).toContain('Timestamp');
  });
});

describe('a signed GET with a body of exactly BODY_LIMIT bytes (PROTOCOL 2: at most 64 KiB)', () => {
  let partner: TestPartner;
  let uri: string;
  beforeAll(async () => {
    partner = await createPartner(t, [game.gameId]);
    uri = queryUri(game.gameId, 'nobody');
  });
  /** A JSON body of exactly `size` bytes. */
  const bodyOf = (size: number) => `{"a":"${'x'.repeat(size - 8)}"}`;
  const auth = (body: string) => `Authorization: ${authorizationHeader({ kind: 'partner', id: partner.partnerId }, partner.secret, 'GET', uri, body, clock.now())}`;
  const byLength = (body: string) => rawRequest(t, head('GET', uri, ['Content-Type: application/json', auth(body)], Buffer.byteLength(body)), body);
  const chunked = (body: string) =>
    rawRequest(
      t,
      [`GET ${uri} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', 'Transfer-Encoding: chunked', 'Content-Type: application/json', auth(body), ''].join('\r\n'),
      `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`,
    );

  it('65,536 bytes by Content-Length: within the limit, so 400 "takes no request body" (not 413); 65,537: 413', async () => {
    const exact = bodyOf(BODY_LIMIT);
    expect(Buffer.byteLength(exact)).toBe(BODY_LIMIT);
    const r = await byLength(exact);
    expect([r.status, JSON.parse(r.body)]).toEqual([400, { error: 'invalid_request', message: 'GET /v1/query-binding takes no request body' }]);
    const over = await byLength(bodyOf(BODY_LIMIT + 1));
    expect([over.status, JSON.parse(over.body).error]).toEqual([413, 'invalid_request']);
  });

  it('65,536 bytes chunked (no Content-Length): 400 "takes no request body" (not 413); 65,537: 413', async () => {
    const r = await chunked(bodyOf(BODY_LIMIT));
    expect([r.status, JSON.parse(r.body)]).toEqual([400, { error: 'invalid_request', message: 'GET /v1/query-binding takes no request body' }]);
    const over = await chunked(bodyOf(BODY_LIMIT + 1));
    expect([over.status, JSON.parse(over.body).error]).toEqual([413, 'invalid_request']);
  });
});

describe('Content-Encoding: identity in any letter case is no coding (RFC 9110 8.4.1: codings are case-insensitive)', () => {
  it.each(['identity', 'Identity', 'IDENTITY'])('create-order with Content-Encoding: %s -> 200', async (value) => {
    const r = await signed(t, game, 'POST', CREATE, orderBody(), { 'content-encoding': value });
    expect(r.status, r.text).toBe(200);
  });

  it('with spaces around it (sent raw) -> 200; gzip -> 415', async () => {
    const body = JSON.stringify(orderBody());
    const sign = (b: string) => `Authorization: ${authorizationHeader({ kind: 'game', id: game.gameId }, game.secret, 'POST', CREATE, b, clock.now())}`;
    const spaced = await rawRequest(t, head('POST', CREATE, ['Content-Type: application/json', 'Content-Encoding:   identity  ', sign(body)], body.length), body);
    expect(spaced.status, spaced.body).toBe(200);
    const gz = await rawRequest(t, head('POST', CREATE, ['Content-Type: application/json', 'Content-Encoding: gzip', sign(body)], body.length), body);
    expect([gz.status, JSON.parse(gz.body).error]).toEqual([415, 'unsupported_media_type']);
  });
});

describe('405 on a path under a wildcard route', () => {
  it('POST /console/a/b -> 405 with Allow: GET, HEAD (the path is served, by /console/*), not 404', async () => {
    for (const path of ['/console/a', '/console/a/b', '/console/orders/ord_1/x']) {
      const res = await fetch(t.url + path, { method: 'POST' });
      const body = (await res.json()) as { error: string };
      expect([path, res.status, body.error, res.headers.get('allow')]).toEqual([path, 405, 'method_not_allowed', 'GET, HEAD']);
    }
    // A path nothing serves is still 404.
    const none = await fetch(t.url + '/nothing/a/b', { method: 'POST' });
    expect(none.status).toBe(404);
  });
});

describe('GET /admin/v1/games: next_cursor is null on the last page', () => {
  it('with exactly `limit` games there is no next page; with one more there is', async () => {
    const s = await startService(); // a fresh database: this test knows every game in it
    try {
      for (let i = 0; i < 3; i++) await createGame(s);
      const all = await admin(s, 'GET', '/admin/v1/games?limit=3');
      expect(all.status).toBe(200);
      expect([all.body.data.length, all.body.next_cursor]).toEqual([3, null]);
      const first = await admin(s, 'GET', '/admin/v1/games?limit=2');
      expect(first.body.data).toHaveLength(2);
      expect(typeof first.body.next_cursor).toBe('string');
      const rest = await admin(s, 'GET', `/admin/v1/games?limit=2&cursor=${first.body.next_cursor}`);
      expect([rest.body.data.length, rest.body.next_cursor]).toEqual([1, null]);
    } finally {
      await s.stop();
    }
  });
});

describe('late payment at the boundary (docs/orders.md: a payment confirmed past expires_at counts as late)', () => {
  const confirm = (orderId: string, txn: string) => t.service.payments.confirm('sandbox', { provider_txn_id: txn, order_id: orderId, amount: 600, currency: 'CNY' });

  it('a payment confirmed at exactly expires_at is late: late_payment 1, payment late 1, event detail late: true', async () => {
    const o = await createOrder(t, game);
    const before = await orderRow(t, o.order_id);
    clock.set(before.expires_at); // exactly: expires_at is the first instant the order is expired
    const out = await confirm(o.order_id, `at-expiry-${o.order_id}`);
    expect(out).toMatchObject({ status: 'accepted', replay: false });
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', late_payment: 1 });
    expect((await paymentsOf(t, o.order_id))[0]).toMatchObject({ status: 'accepted', late: 1 });
    const events = await eventsOf(t, o.order_id);
    expect(events.map((e) => [e.from_status, e.to_status])).toEqual([['created', 'paid']]);
    expect(JSON.parse(events[0]!.detail!)).toMatchObject({ late: true });
  });

  it('1 ms before expires_at it is on time: late_payment 0, no late in the event', async () => {
    const o = await createOrder(t, game);
    clock.set((await orderRow(t, o.order_id)).expires_at - 1);
    await confirm(o.order_id, `before-expiry-${o.order_id}`);
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', late_payment: 0 });
    const events = await eventsOf(t, o.order_id);
    expect(JSON.parse(events[0]!.detail!).late).toBeUndefined();
  });
});

describe('the expiry sweeper', () => {
  it('works off a backlog batch after batch in one run: batchSize 2, 5 orders past due -> all 5 expired', async () => {
    const sclock = new ManualClock(Date.now());
    const s = await startService({ clock: sclock, env: { SWEEP_INTERVAL_MS: '600000' } });
    try {
      const g = await createGame(s, { order_ttl_seconds: 60 });
      const orders = [];
      for (let i = 0; i < 5; i++) orders.push(await createOrder(s, g));
      sclock.advance(61_000);
      const db = s.service.database;
      const store = new OrderStore(db);
      const sweeper = new OrderSweeper({ store, lifecycle: new OrderLifecycle({ store, ids: new IdGenerator() }), clock: sclock, intervalMs: 600_000, batchSize: 2 });
      expect(await sweeper.sweepOnce()).toBe(5);
      for (const o of orders) expect(await statusOf(s, o.order_id)).toBe('expired');
      expect(await sweeper.sweepOnce()).toBe(0);
    } finally {
      await s.stop();
    }
  });
});

describe('PROTOCOL 5: ship_order data has no context key when the order had none', () => {
  let n = 0;
  async function shipOrderData(overrides: Record<string, unknown>): Promise<Record<string, unknown>> {
    const path = `/notify/ctx-${++n}`;
    const o = await createOrder(t, game, { notify_url: `${receiver.url}${path}`, ...overrides });
    const p = await pay(t, o.order_token);
    expect(p.status, p.text).toBe(200);
    const got = await until(`ship_order at ${path}`, () => receiver.on(path)[0]);
    expect(got.signatureProblem).toBeNull();
    expect(got.body.notification_type).toBe('ship_order');
    expect(got.body.data.order_id).toBe(o.order_id);
    return got.body.data;
  }

  it('create-order without context -> sandbox pay -> data has no context key', async () => {
    const data = await shipOrderData({});
    expect(Object.keys(data)).not.toContain('context');
  });

  it('create-order with context "" (PROTOCOL 3: absent for SDK callers) -> data has no context key', async () => {
    const data = await shipOrderData({ context: '' });
    expect(Object.keys(data)).not.toContain('context');
  });

  it('create-order with a context -> data carries it as given', async () => {
    const data = await shipOrderData({ context: 'ctx-7' });
    expect(data.context).toBe('ctx-7');
  });
});

describe('NODE_ID (docs/configuration.md): an order whose id is taken gets another; after 8 tries it is 503', () => {
  /** The service's one IdGenerator (shared by every domain service), reached through the game service. */
  const generator = () => {
    const ids = (t.service.games as unknown as { d: { ids: IdGenerator } }).d.ids;
    expect(ids).toBeInstanceOf(IdGenerator);
    return ids;
  };

  /** create-order while the generator hands out `taken` (ids of stored orders) first. */
  async function createAfterTaken(taken: string[], body = orderBody()) {
    const ids = generator();
    const queue = [...taken];
    let handedOut = 0;
    const next = ids.next.bind(ids);
    ids.next = (now?: number) => {
      handedOut++;
      return queue.shift() ?? next(now);
    };
    try {
      const r = await signed(t, game, 'POST', CREATE, body);
      return { r, handedOut };
    } finally {
      delete (ids as unknown as { next?: unknown }).next; // back to the prototype's
    }
  }

  let taken: string[];
  beforeAll(async () => {
    taken = [];
    for (let i = 0; i < 8; i++) taken.push((await createOrder(t, game)).order_id);
  });

  it('7 taken ids in a row: the 8th try succeeds (200), under a free id', async () => {
    const { r, handedOut } = await createAfterTaken(taken.slice(0, 7));
    expect(r.status, r.text).toBe(200);
    expect(handedOut).toBe(8);
    expect(taken).not.toContain(r.body.order_id);
    expect((await orderRow(t, r.body.order_id)).status).toBe('created');
  });

  it('8 taken ids in a row: 503 service_unavailable (retryable), nothing stored', async () => {
    const body = orderBody();
    const { r, handedOut } = await createAfterTaken(taken, body);
    expect([r.status, r.body.error]).toEqual([503, 'service_unavailable']);
    expect(handedOut).toBe(8);
    const stored = await t.service.database.db.selectFrom('orders').select('order_id').where('reference_id', '=', body.reference_id as string).execute();
    expect(stored).toEqual([]);
    // A retry with the same reference_id is safe, and succeeds once a free id comes.
    const retry = await signed(t, game, 'POST', CREATE, body);
    expect(retry.status).toBe(200);
  });
});

describe('Combo SDK methods this service does not provide', () => {
  it.each(['send-otp', 'verify-otp', 'minigame-weixin-access-token', 'voice-moderation-request'])('%s: 501 not_implemented naming it (after the signature), on /v1 and /v3', async (method) => {
    for (const prefix of ['/v1/server', '/v3/server']) {
      const r = await signed(t, game, 'POST', `${prefix}/${method}`, { phone_number: '+8613800000000' });
      expect([r.status, r.body.error]).toEqual([501, 'not_implemented']);
      expect(r.body.message).toContain(method);
      expect(r.headers.get('x-trace-id')).toBeTruthy();
      const unsigned = await fetch(`${t.url}${prefix}/${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(unsigned.status).toBe(401);
    }
  });
});
