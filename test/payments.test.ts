import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { OrderSweeper } from '../src/orders/sweeper.js';
import { IdGenerator } from '../src/lib/ids.js';
import { OrderLifecycle } from '../src/orders/lifecycle.js';
import { OrderStore } from '../src/orders/store.js';
import { SandboxProvider } from '../src/payments/sandbox/index.js';
import { PaymentService } from '../src/payments/service.js';
import { PaymentStore } from '../src/payments/store.js';
import { systemClock } from '../src/lib/clock.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { client, createOrder, eventsOf, notificationsOf, orderRow, pay, paymentsOf, statusOf, until } from './helpers/orders.js';

let t: TestService;
let game: TestGame;
beforeAll(async () => {
  t = await startService();
  game = await createGame(t);
});
afterAll(async () => t?.stop());

const confirm = (conf: Record<string, unknown>) => t.service.payments.confirm('sandbox', conf);

describe('sandbox payment', () => {
  it('pays a created order: paid, is_sandbox, one ship_order carrying is_sandbox true, timeline', async () => {
    const o = await createOrder(t, game, { quantity: 3, context: 'ctx-1' });
    const r = await pay(t, o.order_token);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ order_id: o.order_id, status: 'paid', quantity: 3, amount: 1800, currency: 'CNY', product_name: '60 gems' });

    const row = await orderRow(t, o.order_id);
    expect(row).toMatchObject({ status: 'paid', is_sandbox: 1, late_payment: 0 });
    expect(row.paid_at).toBeGreaterThan(0);
    const ntfs = await notificationsOf(t, o.order_id);
    expect(ntfs.map((n) => n.type)).toEqual(['ship_order']);
    const body = JSON.parse(ntfs[0]!.body);
    expect(body).toMatchObject({ version: '1.0', notification_type: 'ship_order', notification_id: ntfs[0]!.notification_id });
    expect(body.data).toMatchObject({ order_id: o.order_id, quantity: 3, amount: 1800, currency: 'CNY', context: 'ctx-1', is_sandbox: true });
    const pays = await paymentsOf(t, o.order_id);
    expect(pays).toHaveLength(1);
    expect(pays[0]).toMatchObject({ provider: 'sandbox', status: 'accepted', amount: 1800, currency: 'CNY', late: 0 });
    // The stored state changes; the creation is the order row itself (admin detail shows it).
    const events = await eventsOf(t, o.order_id);
    expect(events.map((e) => [e.from_status, e.to_status])).toEqual([['created', 'paid']]);
    expect(events[0]!.at).toBe(row.paid_at);
  });

  it('paying an already paid order answers 200 with its status and changes nothing', async () => {
    const o = await createOrder(t, game);
    expect((await pay(t, o.order_token)).status).toBe(200);
    const again = await pay(t, o.order_token);
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('paid');
    expect(await paymentsOf(t, o.order_id)).toHaveLength(1);
    expect(await notificationsOf(t, o.order_id)).toHaveLength(1);
  });

  it('20 concurrent pays of one order: one accepted payment, one ship_order', async () => {
    const o = await createOrder(t, game);
    const answers = await Promise.all(Array.from({ length: 20 }, () => pay(t, o.order_token)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(new Set(answers.map((a) => a.body.status))).toEqual(new Set(['paid']));
    const pays = await paymentsOf(t, o.order_id);
    expect(pays.filter((p) => p.status === 'accepted')).toHaveLength(1);
    expect(pays).toHaveLength(1);
    expect((await notificationsOf(t, o.order_id)).filter((n) => n.type === 'ship_order')).toHaveLength(1);
  });
});

describe('provider confirmations (the provider interface)', () => {
  it('concurrent confirmations with different transaction ids: one accepted, the rest flagged, one ship_order', async () => {
    const o = await createOrder(t, game);
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => confirm({ provider_txn_id: `txn-${o.order_id}-${i}`, order_id: o.order_id, amount: 600, currency: 'CNY' })),
    );
    expect(outcomes.filter((x) => x.status === 'accepted')).toHaveLength(1);
    const flagged = outcomes.filter((x) => x.status === 'flagged');
    expect(flagged).toHaveLength(7);
    expect(new Set(flagged.map((f) => f.reason))).toEqual(new Set(['order_paid']));
    expect(await statusOf(t, o.order_id)).toBe('paid');
    expect(await notificationsOf(t, o.order_id)).toHaveLength(1);
    expect((await paymentsOf(t, o.order_id)).map((p) => p.status).sort()).toEqual(['accepted', ...Array(7).fill('flagged')]);
  });

  it('is idempotent per provider transaction id, also concurrently', async () => {
    const o = await createOrder(t, game);
    const conf = { provider_txn_id: `same-${o.order_id}`, order_id: o.order_id, amount: 600, currency: 'CNY' };
    const first = await confirm(conf);
    expect(first).toMatchObject({ status: 'accepted', replay: false });
    const again = await Promise.all(Array.from({ length: 5 }, () => confirm(conf)));
    for (const a of again) expect(a).toMatchObject({ status: 'accepted', replay: true, payment_id: first.payment_id });
    expect(await paymentsOf(t, o.order_id)).toHaveLength(1);
    expect(await notificationsOf(t, o.order_id)).toHaveLength(1);

    const o2 = await createOrder(t, game);
    const conf2 = { provider_txn_id: `race-${o2.order_id}`, order_id: o2.order_id, amount: 600, currency: 'CNY' };
    const racing = await Promise.all(Array.from({ length: 6 }, () => confirm(conf2)));
    expect(new Set(racing.map((r) => r.payment_id)).size).toBe(1);
    expect(racing.filter((r) => !r.replay)).toHaveLength(1);
    expect(await paymentsOf(t, o2.order_id)).toHaveLength(1);
    expect(await notificationsOf(t, o2.order_id)).toHaveLength(1);
  });

  it.each([
    ['amount', { amount: 599, currency: 'CNY' }],
    ['amount (more)', { amount: 601, currency: 'CNY' }],
    ['currency', { amount: 600, currency: 'USD' }],
  ])('flags a payment whose %s differs and leaves the order unchanged', async (_what, paid) => {
    const o = await createOrder(t, game);
    const conf = { provider_txn_id: `mm-${o.order_id}`, order_id: o.order_id, ...paid };
    const out = await confirm(conf);
    expect(out).toMatchObject({ status: 'flagged', reason: 'amount_mismatch', replay: false });
    expect(await confirm(conf)).toMatchObject({ status: 'flagged', reason: 'amount_mismatch', replay: true });
    expect(await statusOf(t, o.order_id)).toBe('created');
    expect(await notificationsOf(t, o.order_id)).toHaveLength(0);
    const pays = await paymentsOf(t, o.order_id);
    expect(pays).toHaveLength(1);
    expect(pays[0]!.status).toBe('flagged');
    expect(JSON.parse(pays[0]!.detail!)).toMatchObject({ reason: 'amount_mismatch', expected: { amount: 600, currency: 'CNY' } });
  });

  it('flags a confirmation for an unknown order, and refuses a malformed one', async () => {
    const out = await confirm({ provider_txn_id: 'ghost-1', order_id: '999999', amount: 600, currency: 'CNY' });
    expect(out).toMatchObject({ status: 'flagged', reason: 'unknown_order' });
    await expect(confirm({ provider_txn_id: '', order_id: '1', amount: 1, currency: 'CNY' })).rejects.toMatchObject({ status: 400 });
    await expect(t.service.payments.confirm('nope', {})).rejects.toMatchObject({ status: 400 });
  });
});

describe('onPaid hook', () => {
  it('runs once after a payment that made an order paid has committed; not for replays or flagged ones', async () => {
    const db = t.service.database.db;
    const ids = new IdGenerator();
    const orders = new OrderStore(t.service.database);
    const seen: { orderId: string; committed: string | undefined }[] = [];
    const payments = new PaymentService({
      payments: new PaymentStore(t.service.database),
      orders,
      lifecycle: new OrderLifecycle({ store: orders, ids }),
      providers: [new SandboxProvider()],
      clock: systemClock,
      ids,
      // Reads the order outside any transaction: it must already see the committed state.
      onPaid: (orderId) => void orders.findById(db, orderId).then((o) => seen.push({ orderId, committed: o?.status })),
    });
    const o = await createOrder(t, game);
    const conf = { provider_txn_id: `hook-${o.order_id}`, order_id: o.order_id, amount: 600, currency: 'CNY' };
    await payments.confirm('sandbox', conf);
    await payments.confirm('sandbox', conf);
    await payments.confirm('sandbox', { ...conf, provider_txn_id: `hook2-${o.order_id}` });
    await payments.confirm('sandbox', { ...conf, provider_txn_id: `hook3-${o.order_id}`, amount: 1 });
    await until(async () => seen.length > 0, 5_000, 'the hook');
    expect(seen).toEqual([{ orderId: o.order_id, committed: 'paid' }]);
  });
});

describe('operator refund and cancel', () => {
  const refund = (id: string, body: unknown = {}) => admin(t, 'POST', `/admin/v1/orders/${id}/refund`, body);
  const cancel = (id: string, body: unknown = {}) => admin(t, 'POST', `/admin/v1/orders/${id}/cancel`, body);

  it('refunds a paid order: refunded, refund notification after ship_order, audit record', async () => {
    const o = await createOrder(t, game);
    await pay(t, o.order_token);
    const r = await refund(o.order_id, { reason: 'player asked' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ order_id: o.order_id, status: 'refunded' });
    expect(r.body.refunded_at).toBeGreaterThan(0);
    expect(r.body).not.toHaveProperty('token_secret');
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
    const audit = await t.service.database.db.selectFrom('audit_log').selectAll().where('target', '=', o.order_id).execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: 'order.refund', actor: 'ADMIN_TOKEN' });
    expect(JSON.parse(audit[0]!.detail!)).toEqual({ from: 'paid', to: 'refunded', reason: 'player asked' });
    const last = (await eventsOf(t, o.order_id)).at(-1)!;
    expect(last).toMatchObject({ from_status: 'paid', to_status: 'refunded' });
    // Refunded is final.
    expect((await refund(o.order_id)).status).toBe(409);
    expect((await cancel(o.order_id)).body.error).toBe('invalid_state');
    // A client paying it again learns its status.
    expect((await pay(t, o.order_token)).body.status).toBe('refunded');
  });

  it('refunds a delivered order', async () => {
    const o = await createOrder(t, game);
    await pay(t, o.order_token);
    // Stands in for the notification dispatcher, which marks an acknowledged order delivered.
    await t.service.database.db.updateTable('orders').set({ status: 'delivered', delivered_at: Date.now() }).where('order_id', '=', o.order_id).execute();
    const r = await refund(o.order_id);
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('refunded');
  });

  it('refuses to refund a created, expired or canceled order (409, nothing changes)', async () => {
    const o = await createOrder(t, game);
    const r = await refund(o.order_id);
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({ error: 'invalid_state' });
    expect(r.body.message).toContain('created');
    expect(await statusOf(t, o.order_id)).toBe('created');
    expect(await notificationsOf(t, o.order_id)).toHaveLength(0);
    expect((await cancel(o.order_id)).status).toBe(200);
    expect((await refund(o.order_id)).status).toBe(409);
  });

  it('cancels a created order once; a canceled order cannot be paid; paid cannot be canceled', async () => {
    const o = await createOrder(t, game);
    const c = await cancel(o.order_id);
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ status: 'canceled' });
    expect((await cancel(o.order_id)).status).toBe(409);
    const p = await pay(t, o.order_token);
    expect(p.status).toBe(409);
    expect(p.body.error).toBe('invalid_state');
    expect(await paymentsOf(t, o.order_id)).toHaveLength(0);
    // A provider confirmation still arriving for it is kept, flagged, for the operator.
    const late = await confirm({ provider_txn_id: `after-cancel-${o.order_id}`, order_id: o.order_id, amount: 600, currency: 'CNY' });
    expect(late).toMatchObject({ status: 'flagged', reason: 'order_canceled' });
    expect(await statusOf(t, o.order_id)).toBe('canceled');

    const paid = await createOrder(t, game);
    await pay(t, paid.order_token);
    expect((await cancel(paid.order_id)).status).toBe(409);
  });

  it('concurrent refunds: exactly one succeeds, one refund notification', async () => {
    const o = await createOrder(t, game);
    await pay(t, o.order_token);
    const answers = await Promise.all(Array.from({ length: 8 }, () => refund(o.order_id)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(7);
    expect((await notificationsOf(t, o.order_id)).filter((n) => n.type === 'refund')).toHaveLength(1);
  });

  it('a pay racing a cancel: exactly one of them wins', async () => {
    const o = await createOrder(t, game);
    const [p, c] = await Promise.all([pay(t, o.order_token), cancel(o.order_id)]);
    const status = await statusOf(t, o.order_id);
    if (status === 'paid') {
      expect(p.status).toBe(200);
      expect(c.status).toBe(409);
      expect(await notificationsOf(t, o.order_id)).toHaveLength(1);
    } else {
      expect(status).toBe('canceled');
      expect(c.status).toBe(200);
      expect(p.status).toBe(409);
      expect(await notificationsOf(t, o.order_id)).toHaveLength(0);
    }
  });

  it('404 for an unknown order; 400 for a bad body', async () => {
    expect((await refund('123456789')).status).toBe(404);
    expect((await cancel('123456789')).body.error).toBe('not_found');
    const o = await createOrder(t, game);
    expect((await cancel(o.order_id, { reason: 5 })).status).toBe(400);
    expect((await cancel(o.order_id, 'null')).status).toBe(400);
    expect((await cancel(o.order_id, { reason: 'x'.repeat(256) })).status).toBe(400);
    expect((await cancel(o.order_id, { reason: 'x'.repeat(255) })).status).toBe(200);
  });
});

describe('expiry (sweeper) and late payment, on a manual clock', () => {
  let m: TestService;
  let clock: ManualClock;
  let g: TestGame;
  beforeAll(async () => {
    clock = new ManualClock(Date.now());
    m = await startService({ clock, env: { SWEEP_INTERVAL_MS: '20' } });
    g = await createGame(m, { order_ttl_seconds: 60 });
  });
  afterAll(async () => m?.stop());
  const sweeper = () => m.service.jobs.find((j): j is OrderSweeper => j instanceof OrderSweeper)!;

  it('expires a created order once expires_at has passed, not before', async () => {
    const o = await createOrder(m, g);
    clock.advance(59_000);
    await sweeper().sweepOnce();
    expect(await statusOf(m, o.order_id)).toBe('created');
    clock.advance(1_000);
    await until(async () => (await statusOf(m, o.order_id)) === 'expired', 10_000, 'the sweeper to expire the order');
    const row = await orderRow(m, o.order_id);
    expect(row.expired_at).toBeGreaterThanOrEqual(row.expires_at);
    expect((await eventsOf(m, o.order_id)).map((e) => [e.from_status, e.to_status])).toEqual([['created', 'expired']]);
  });

  it('shows an order past expires_at as expired to the client at once, and refuses to start paying it', async () => {
    const o = await createOrder(m, g);
    await sweeper().stop(); // hold the sweeper: the client view must not depend on it
    try {
      clock.advance(61_000);
      const v = await client(m, '/v1/client/order', { order_token: o.order_token });
      expect(v.body.status).toBe('expired');
      expect(await statusOf(m, o.order_id)).toBe('created');
      const p = await pay(m, o.order_token);
      expect(p.status).toBe(409);
      expect(p.body.error).toBe('invalid_state');
      // Nor can an operator cancel it: it is expired, recorded or not.
      const c = await admin(m, 'POST', `/admin/v1/orders/${o.order_id}/cancel`, {});
      expect([c.status, c.body.error]).toEqual([409, 'invalid_state']);
      expect(c.body.message).toContain('expired');
      expect(await statusOf(m, o.order_id)).toBe('created');
      expect(await eventsOf(m, o.order_id)).toEqual([]);
    } finally {
      sweeper().start();
    }
  });

  it('accepts a payment confirmed after expiry: paid, late_payment, ship_order queued', async () => {
    const o = await createOrder(m, g);
    clock.advance(120_000);
    await until(async () => (await statusOf(m, o.order_id)) === 'expired', 10_000, 'expiry');
    const out = await m.service.payments.confirm('sandbox', { provider_txn_id: `late-${o.order_id}`, order_id: o.order_id, amount: 600, currency: 'CNY' });
    expect(out).toMatchObject({ status: 'accepted', replay: false });
    const row = await orderRow(m, o.order_id);
    expect(row).toMatchObject({ status: 'paid', late_payment: 1, is_sandbox: 1 });
    expect((await paymentsOf(m, o.order_id))[0]).toMatchObject({ status: 'accepted', late: 1 });
    expect((await notificationsOf(m, o.order_id)).map((n) => n.type)).toEqual(['ship_order']);
    const events = await eventsOf(m, o.order_id);
    expect(events.map((e) => e.to_status)).toEqual(['expired', 'paid']);
    expect(JSON.parse(events[1]!.detail!)).toMatchObject({ late: true, provider: 'sandbox' });
    const detail = await admin(m, 'GET', `/admin/v1/orders/${o.order_id}`);
    expect(detail.body).toMatchObject({ status: 'paid', late_payment: true });
  });

  it('a confirmation past expires_at but before the sweep is late too', async () => {
    const o = await createOrder(m, g);
    await sweeper().stop();
    try {
      clock.advance(61_000);
      await m.service.payments.confirm('sandbox', { provider_txn_id: `late2-${o.order_id}`, order_id: o.order_id, amount: 600, currency: 'CNY' });
      expect(await orderRow(m, o.order_id)).toMatchObject({ status: 'paid', late_payment: 1 });
    } finally {
      sweeper().start();
    }
  });
});
