import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { createOrder, pay, until, type CreatedOrder } from './helpers/orders.js';
import { Receiver, status } from './helpers/receiver.js';

let t: TestService;
beforeAll(async () => {
  t = await startService({ env: { PUBLIC_BASE_URL: 'https://pay.example.com/base' } });
});
afterAll(async () => t?.stop());

const list = (query: string) => admin(t, 'GET', `/admin/v1/orders${query}`);

/** Expected listing order: newest first by (created_at, order_id). */
async function newestFirst(gameId: string): Promise<string[]> {
  const rows = await t.service.database.db.selectFrom('orders').select(['order_id', 'created_at']).where('game_id', '=', gameId).execute();
  rows.sort((a, b) => b.created_at - a.created_at || (BigInt(b.order_id) > BigInt(a.order_id) ? 1 : -1));
  return rows.map((r) => r.order_id);
}

async function createMany(game: TestGame, n: number, overrides: Record<string, unknown> = {}): Promise<CreatedOrder[]> {
  const out: CreatedOrder[] = [];
  for (let i = 0; i < n; i += 10) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(10, n - i) }, () => createOrder(t, game, overrides)))));
  }
  return out;
}

describe('GET /admin/v1/orders', () => {
  let game: TestGame;
  let orders: CreatedOrder[];
  beforeAll(async () => {
    game = await createGame(t);
    orders = await createMany(game, 55);
  });

  it('pages newest first with the default limit 50, then the rest, then next_cursor null', async () => {
    const first = await list(`?game_id=${game.gameId}`);
    expect(first.status).toBe(200);
    expect(first.body.data).toHaveLength(50);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await list(`?game_id=${game.gameId}&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.data).toHaveLength(5);
    expect(second.body.next_cursor).toBeNull();
    const seen = [...first.body.data, ...second.body.data].map((o: { order_id: string }) => o.order_id);
    expect(seen).toEqual(await newestFirst(game.gameId));
    expect(new Set(seen)).toEqual(new Set(orders.map((o) => o.order_id)));
  });

  it('pages with a small limit without gaps or repeats', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: { status: number; body: { data: { order_id: string }[]; next_cursor: string | null } } = await list(
        `?game_id=${game.gameId}&limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(7);
      seen.push(...r.body.data.map((o) => o.order_id));
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(8);
    expect(seen).toEqual(await newestFirst(game.gameId));
  });

  it('a page that ends exactly at the last order has next_cursor null', async () => {
    const g = await createGame(t);
    await createMany(g, 4);
    const a = await list(`?game_id=${g.gameId}&limit=2`);
    const b = await list(`?game_id=${g.gameId}&limit=2&cursor=${a.body.next_cursor}`);
    expect(b.body.data).toHaveLength(2);
    expect(b.body.next_cursor).toBeNull();
  });

  it('filters by status, combo_id, reference_id and game_id', async () => {
    const g = await createGame(t);
    const a = await createOrder(t, g, { combo_id: 'player-a' });
    const b = await createOrder(t, g, { combo_id: 'player-b', reference_id: 'ref-filter-b-0001' });
    await createOrder(t, g, { combo_id: 'player-b' });
    await pay(t, a.order_token);

    const paid = await list(`?game_id=${g.gameId}&status=paid`);
    expect(paid.body.data.map((o: { order_id: string }) => o.order_id)).toEqual([a.order_id]);
    expect(paid.body.data[0]).toMatchObject({ status: 'paid', is_sandbox: true, combo_id: 'player-a' });

    const byCombo = await list(`?game_id=${g.gameId}&combo_id=player-b`);
    expect(byCombo.body.data).toHaveLength(2);
    const byRef = await list(`?reference_id=ref-filter-b-0001&game_id=${g.gameId}`);
    expect(byRef.body.data.map((o: { order_id: string }) => o.order_id)).toEqual([b.order_id]);
    const created = await list(`?game_id=${g.gameId}&status=created&combo_id=player-b&limit=1`);
    expect(created.body.data).toHaveLength(1);
    expect(created.body.next_cursor).not.toBeNull();
    expect((await list(`?game_id=no-such-game`)).body).toEqual({ data: [], next_cursor: null });
    // Without game_id: across games, still newest first.
    const all = await list('?limit=3');
    expect(all.body.data).toHaveLength(3);
  });

  it('without game_id, a filter merges every game newest first, paged without gaps or repeats', async () => {
    const games = [await createGame(t), await createGame(t), await createGame(t)];
    const combo = `merge-${Date.now()}`;
    const made: CreatedOrder[] = [];
    for (let i = 0; i < 12; i++) made.push(await createOrder(t, games[i % 3]!, { combo_id: combo, reference_id: `merge-ref-${combo}-${i % 4}` }));
    await pay(t, made[4]!.order_token);
    await pay(t, made[7]!.order_token);
    const rows = await t.service.database.db.selectFrom('orders').select(['order_id', 'created_at', 'status', 'reference_id']).where('combo_id', '=', combo).execute();
    rows.sort((a, b) => b.created_at - a.created_at || (b.order_id > a.order_id ? 1 : -1));
    const walk = async (q: string) => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const r: any = await list(`?${q}&limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(r.status).toBe(200);
        seen.push(...r.body.data.map((o: { order_id: string }) => o.order_id));
        cursor = r.body.next_cursor;
      } while (cursor);
      return seen;
    };
    expect(await walk(`combo_id=${combo}`)).toEqual(rows.map((r) => r.order_id));
    expect(await walk(`combo_id=${combo}&status=created`)).toEqual(rows.filter((r) => r.status === 'created').map((r) => r.order_id));
    const paid = (await list(`?status=paid&combo_id=${combo}`)).body.data.map((o: { order_id: string }) => o.order_id);
    expect(paid).toEqual(rows.filter((r) => r.status === 'paid').map((r) => r.order_id));
    // one reference_id, used once in each of three games
    const ref = `merge-ref-${combo}-0`;
    expect(await walk(`reference_id=${ref}`)).toEqual(rows.filter((r) => r.reference_id === ref).map((r) => r.order_id));
    expect((await list(`?reference_id=${ref}`)).body.data).toHaveLength(3);
    const newest = (await list('?status=created&limit=1')).body.data[0];
    expect(newest.created_at).toBe(Math.max(...(await t.service.database.db.selectFrom('orders').select('created_at').where('status', '=', 'created').execute()).map((r) => r.created_at)));
  });

  it('never exposes the token secret or request hash', async () => {
    const r = await list(`?game_id=${game.gameId}&limit=5`);
    for (const o of r.body.data) {
      expect(o).not.toHaveProperty('token_secret');
      expect(o).not.toHaveProperty('request_hash');
      expect(o).not.toHaveProperty('checkout_url');
    }
    for (const o of orders) expect(r.text).not.toContain(o.order_token.split('_')[2]);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=201', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
    // Only decimal digits are an integer (Number() would take these), and a parameter once.
    ['limit=0x10', 'limit must be an integer'],
    ['limit=1e1', 'limit must be an integer'],
    ['limit=%201', 'limit must be an integer'],
    // Digits past what a number holds exactly: an integer out of range, named by its bound.
    ['limit=99999999999999999999', 'querystring parameter limit must be <= 200'],
    ['limit=-99999999999999999999', 'querystring parameter limit must be >= 1'],
    ['limit=00000000000000000001', 'limit must be an integer'],
    ['limit=1&limit=2', 'limit must be given once'],
    ['status=paid&status=created', 'status must be given once'],
    ['status=lost', 'status'],
    ['cursor=bm9wZQ', 'cursor'],
    ['cursor=', 'cursor'],
    [`combo_id=${'x'.repeat(65)}`, 'combo_id'],
    ['combo_id=a%00b', 'combo_id'],
    ['reference_id=%00', 'reference_id'],
    ['game_id=%00', 'game_id'],
    ['combo_id=%FF', 'combo_id is not valid percent-encoded UTF-8'],
    ['combo_id=%E4%B8', 'combo_id is not valid percent-encoded UTF-8'],
    ['combo_id=%ED%A0%80', 'combo_id is not valid percent-encoded UTF-8'],
    ['combo_id=a%zz', 'combo_id is not valid percent-encoded UTF-8'],
    ['combo_id=a%', 'combo_id is not valid percent-encoded UTF-8'],
    ['limit=1&combo%FF=x', 'combo%FF is not valid percent-encoded UTF-8'],
    ['game_i=x', 'game_i is not a known parameter'],
  ])('400 invalid_request for %s', async (q, field) => {
    const r = await list(`?${q}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect(r.body.message).toContain(field);
  });

  it('accepts the limit bounds 1 and 200', async () => {
    expect((await list(`?game_id=${game.gameId}&limit=1`)).body.data).toHaveLength(1);
    expect((await list(`?game_id=${game.gameId}&limit=200`)).body.data).toHaveLength(55);
  });

  it('401 without the admin token', async () => {
    const r = await fetch(`${t.url}/admin/v1/orders`);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer');
    expect((await r.json()).error).toBe('unauthorized');
  });
});

describe('GET /admin/v1/orders/:order_id', () => {
  it('shows the order with its timeline, payments, notifications and their attempts', async () => {
    const game = await createGame(t);
    const o = await createOrder(t, game, { context: 'ctx', meta: { role_id: 'r1', role_level: 3 } });
    await pay(t, o.order_token);
    const db = t.service.database.db;
    const ntf = await db.selectFrom('notifications').selectAll().where('order_id', '=', o.order_id).executeTakeFirstOrThrow();
    // Stands in for the notification dispatcher: one failed delivery attempt.
    await db
      .insertInto('notification_attempts')
      .values({ attempt_id: 'att_test_1', notification_id: ntf.notification_id, at: Date.now(), status_code: 500, latency_ms: 12, error: 'HTTP 500', response_snippet: 'oops' })
      .execute();
    expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {})).status).toBe(200);

    const r = await admin(t, 'GET', `/admin/v1/orders/${o.order_id}`);
    expect(r.status).toBe(200);
    const d = r.body;
    expect(d).toMatchObject({
      order_id: o.order_id,
      game_id: game.gameId,
      status: 'refunded',
      amount: 600,
      currency: 'CNY',
      context: 'ctx',
      meta: { role_id: 'r1', role_level: 3 },
      is_sandbox: true,
      late_payment: false,
      checkout_url: `https://pay.example.com/base/checkout/${o.order_token}`,
    });
    expect(d).not.toHaveProperty('token_secret');
    expect(d).not.toHaveProperty('request_hash');
    expect(d.events.map((e: { from_status: string | null; to_status: string }) => [e.from_status, e.to_status])).toEqual([
      [null, 'created'],
      ['created', 'paid'],
      ['paid', 'refunded'],
    ]);
    expect(d.events[0]).toEqual({ from_status: null, to_status: 'created', at: d.created_at, detail: null });
    expect(d.events[2].detail).toEqual({ actor: 'ADMIN_TOKEN' });
    expect(d.payments).toHaveLength(1);
    expect(d.payments[0]).toMatchObject({ provider: 'sandbox', provider_txn_id: `sbx_${o.order_id}`, status: 'accepted', amount: 600, late: false });
    expect(d.notifications.map((n: { type: string }) => n.type)).toEqual(['ship_order', 'refund']);
    // The dispatcher runs too (game.example.com does not resolve here): the recorded attempt is
    // among the notification's attempts, with every field.
    expect(d.notifications[0].attempts).toContainEqual(
      { attempt_id: 'att_test_1', at: expect.any(Number), status_code: 500, latency_ms: 12, error: 'HTTP 500', response_snippet: 'oops' },
    );
    // The refund waits for the ship_order, which keeps failing: never attempted.
    expect(d.notifications[1]).toMatchObject({ status: 'pending', attempts: [] });
  });

  it('gives next_attempt_at only while a notification is pending, as the notifications API does', async () => {
    const game = await createGame(t);
    const receiver = await new Receiver({ keys: new Map([[game.gameId, [game.secret]]]), now: () => Date.now() }).start();
    try {
      // The ship_order is acknowledged; the refund is refused (500) and stays pending.
      receiver.script('/notify', (r) => (r.body.notification_type === 'refund' ? status(500) : status(200)));
      const o = await createOrder(t, game, { notify_url: `${receiver.url}/notify` });
      await pay(t, o.order_token);
      const detail = async () => (await admin(t, 'GET', `/admin/v1/orders/${o.order_id}`)).body;
      await until(async () => (await detail()).status === 'delivered', 10_000, 'the ship_order to be acknowledged');
      expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {})).status).toBe(200);
      await until(async () => receiver.on('/notify').some((r) => r.body.notification_type === 'refund'), 10_000, 'a refund attempt');

      const d = await detail();
      const [ship, refund] = d.notifications;
      expect(ship).toMatchObject({ type: 'ship_order', status: 'succeeded', next_attempt_at: null });
      expect(refund).toMatchObject({ type: 'refund', status: 'pending', next_attempt_at: expect.any(Number) });
      for (const n of d.notifications) {
        const api = (await admin(t, 'GET', `/admin/v1/notifications/${n.notification_id}`)).body;
        expect([n.notification_id, n.next_attempt_at === null]).toEqual([n.notification_id, api.next_attempt_at === null]);
      }
    } finally {
      await receiver.close();
    }
  });

  it('shows the creation once: from the order row, or as stored for an order that has its creation event', async () => {
    const game = await createGame(t);
    const db = t.service.database.db;
    const fresh = await createOrder(t, game);
    // create-order writes the order row alone; its creation is the row's created_at.
    expect(await db.selectFrom('order_events').select('event_id').where('order_id', '=', fresh.order_id).execute()).toEqual([]);
    const created = (await admin(t, 'GET', `/admin/v1/orders/${fresh.order_id}`)).body;
    expect(created.events).toEqual([{ from_status: null, to_status: 'created', at: created.created_at, detail: null }]);

    // An order created before that (a stored creation event, here with a detail to tell it
    // apart) shows its stored event, not a second one.
    const older = await createOrder(t, game);
    await db
      .insertInto('order_events')
      .values({ event_id: `oev_legacy_${older.order_id}`, order_id: older.order_id, from_status: null, to_status: 'created', at: 1, detail: '{"legacy":true}' })
      .execute();
    await pay(t, older.order_token);
    const d = (await admin(t, 'GET', `/admin/v1/orders/${older.order_id}`)).body;
    expect(d.events.map((e: { from_status: string | null; to_status: string }) => [e.from_status, e.to_status])).toEqual([
      [null, 'created'],
      ['created', 'paid'],
    ]);
    expect(d.events[0]).toEqual({ from_status: null, to_status: 'created', at: 1, detail: { legacy: true } });
  });

  it('404 not_found for an unknown order; 400 for an order id that is not one', async () => {
    const r = await admin(t, 'GET', '/admin/v1/orders/42');
    expect(r.status).toBe(404);
    expect(r.body.error).toBe('not_found');
    for (const id of ['abc', '%00', '1'.repeat(21)]) {
      const b = await admin(t, 'GET', `/admin/v1/orders/${id}`);
      expect([id, b.status, b.body.error]).toEqual([id, 400, 'invalid_request']);
      expect((await admin(t, 'POST', `/admin/v1/orders/${id}/refund`, {})).status).toBe(400);
    }
  });
});
