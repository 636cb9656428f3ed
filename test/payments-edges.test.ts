import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckoutService } from '../src/checkout/service.js';
import { ManualClock } from '../src/lib/clock.js';
import { IdGenerator } from '../src/lib/ids.js';
import { OrderLifecycle } from '../src/orders/lifecycle.js';
import { OrderStore } from '../src/orders/store.js';
import { OrderSweeper } from '../src/orders/sweeper.js';
import type { PayableOrder, PaymentProvider, PaymentStart, VerifiedPayment } from '../src/payments/provider.js';
import { PaymentService } from '../src/payments/service.js';
import { PaymentStore } from '../src/payments/store.js';
import { Receiver, until as untilValue } from './helpers/receiver.js';
import { client, createOrder, eventsOf, notificationsOf, orderRow, pay, paymentsOf, statusOf } from './helpers/orders.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * Edges of paying (docs/orders.md, PROTOCOL 6 and 10): a channel that moves real money (not
 * sandbox), an order changed under a payment, the exact expiry instant, the checkout page's
 * framing policy. On a manual clock; the order lifetime is 60 s.
 */
const TTL_MS = 60_000;
const clock = new ManualClock(Date.now());
const keys = new Map<string, string[]>();
let receiver: Receiver;
let t: TestService;
let game: TestGame;

beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => clock.now() }).start();
  t = await startService({ clock, env: { SWEEP_INTERVAL_MS: '20', NOTIFY_POLL_INTERVAL_MS: '50' } });
  game = await createGame(t, { order_ttl_seconds: TTL_MS / 1000 });
  keys.set(game.gameId, [game.secret]);
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

const sweeper = () => t.service.jobs.find((j): j is OrderSweeper => j instanceof OrderSweeper)!;

/**
 * A channel that moves real money (PROTOCOL 10's provider interface): confirms at once, like
 * sandbox, but is not sandbox. `beforeConfirming` runs inside start(), before it answers.
 */
class CardProvider implements PaymentProvider {
  readonly name = 'card';
  readonly sandbox = false;
  readonly settingsBody = Type.Object({ enabled: Type.Boolean() });
  readonly secretFields = [];
  readonly hasCallbacks = false;
  constructor(private readonly beforeConfirming?: (order: PayableOrder) => Promise<void>) {}
  async start(order: PayableOrder): Promise<PaymentStart> {
    await this.beforeConfirming?.(order);
    const confirmation: VerifiedPayment = { provider_txn_id: `card_${order.order_id}`, order_id: order.order_id, amount: order.amount, currency: order.currency };
    return { kind: 'confirmed', confirmation };
  }
  async verify(confirmation: unknown): Promise<VerifiedPayment> {
    return confirmation as VerifiedPayment;
  }
}

/** The service's payment domain over its database, with the given channel instead of sandbox. */
function paymentsWith(provider: PaymentProvider): { payments: PaymentService; orders: OrderStore } {
  const db = t.service.database;
  const ids = new IdGenerator();
  const orders = new OrderStore(db);
  const payments = new PaymentService({
    payments: new PaymentStore(db),
    orders,
    lifecycle: new OrderLifecycle({ store: orders, ids }),
    providers: [provider],
    clock,
    ids,
    onPaid: () => t.service.dispatcher.kick(),
  });
  return { payments, orders };
}

describe('a payment channel that is not sandbox', () => {
  // docs/orders.md: "`is_sandbox` = 1 for sandbox payments"; PROTOCOL 5: ship_order data.is_sandbox.
  it('marks the order not sandbox, and the ship_order the game receives says is_sandbox false', async () => {
    const path = '/card/1';
    const o = await createOrder(t, game, { notify_url: receiver.url + path });
    const { payments } = paymentsWith(new CardProvider());
    const out = await payments.confirm('card', { provider_txn_id: `card_${o.order_id}`, order_id: o.order_id, amount: 600, currency: 'CNY' });
    expect(out).toMatchObject({ status: 'accepted', replay: false });
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', is_sandbox: 0, late_payment: 0 });
    expect((await paymentsOf(t, o.order_id)).map((p) => [p.provider, p.status])).toEqual([['card', 'accepted']]);
    const ntfs = await notificationsOf(t, o.order_id);
    expect(ntfs.map((n) => n.type)).toEqual(['ship_order']);
    expect(JSON.parse(ntfs[0]!.body).data.is_sandbox).toBe(false);
    // What the game gets, signed, and the operator's view.
    const got = await untilValue('the ship_order at the game', () => receiver.on(path)[0]);
    expect(got.signatureProblem).toBeNull();
    expect(got.body.data).toMatchObject({ order_id: o.order_id, is_sandbox: false });
    await untilValue('the order delivered', async () => (await statusOf(t, o.order_id)) === 'delivered');
    expect((await admin(t, 'GET', `/admin/v1/orders/${o.order_id}`)).body.is_sandbox).toBe(false);
  });
});

describe('an order that changes under its payment', () => {
  // PROTOCOL 10 / checkout: an order canceled while the provider was confirming is not paid;
  // the client is told 409 invalid_state, not a 200 with a canceled order.
  it('pay answers 409 invalid_state when the order was canceled while the provider was starting the payment', async () => {
    const o = await createOrder(t, game);
    const { payments, orders } = paymentsWith(
      new CardProvider(async (order) => {
        const c = await admin(t, 'POST', `/admin/v1/orders/${order.order_id}/cancel`, { reason: 'canceled mid-payment' });
        expect(c.status).toBe(200);
      }),
    );
    // The checkout domain as the service builds it, paying through that channel.
    const channels = async () => new Map([['card', { game_id: game.gameId, channel: 'card', enabled: true, settings: {} }]]);
    const checkout = new CheckoutService({ orders, games: (id) => t.service.games.snapshot(id), payments, channels, clock });
    await expect(checkout.pay(o.order_token, 'card')).rejects.toMatchObject({ status: 409, code: 'invalid_state', message: expect.stringContaining('canceled') });
    expect(await statusOf(t, o.order_id)).toBe('canceled');
    // The money that moved is kept for the operator (flagged), and the game is told nothing.
    const pays = await paymentsOf(t, o.order_id);
    expect(pays.map((p) => [p.provider, p.status])).toEqual([['card', 'flagged']]);
    expect(JSON.parse(pays[0]!.detail!)).toMatchObject({ reason: 'order_canceled' });
    expect(await notificationsOf(t, o.order_id)).toHaveLength(0);
  });
});

describe('the expiry instant', () => {
  // docs/orders.md: clients see `created` orders past expires_at as expired at once; a payment
  // confirmed while the order is still `created` but past expires_at counts as late. The
  // sweeper expires at expires_at itself (now >= expires_at): the client view and lateness
  // use the same instant.
  it('at exactly expires_at the client sees expired and cannot pay, and a confirmation then is late', async () => {
    const o = await createOrder(t, game);
    await sweeper().stop(); // the client view and lateness must not depend on the sweeper
    try {
      const row = await orderRow(t, o.order_id);
      expect(row.expires_at - row.created_at).toBe(TTL_MS);
      clock.set(row.expires_at);

      const v = await client(t, '/v1/client/order', { order_token: o.order_token });
      expect(v.status).toBe(200);
      expect(v.body.status).toBe('expired');
      const p = await pay(t, o.order_token);
      expect([p.status, p.body.error]).toEqual([409, 'invalid_state']);
      expect(await statusOf(t, o.order_id)).toBe('created');

      const out = await t.service.payments.confirm('sandbox', { provider_txn_id: `edge-${o.order_id}`, order_id: o.order_id, amount: 600, currency: 'CNY' });
      expect(out).toMatchObject({ status: 'accepted', replay: false });
      expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', late_payment: 1, paid_at: row.expires_at });
      expect((await paymentsOf(t, o.order_id))[0]).toMatchObject({ status: 'accepted', late: 1 });
      const events = await eventsOf(t, o.order_id);
      expect(events.map((e) => [e.from_status, e.to_status])).toEqual([['created', 'paid']]);
      expect(JSON.parse(events[0]!.detail!)).toMatchObject({ late: true });
      expect((await admin(t, 'GET', `/admin/v1/orders/${o.order_id}`)).body.late_payment).toBe(true);
    } finally {
      sweeper().start();
    }
  });
});

describe('the checkout page', () => {
  // docs/orders.md "Hosted checkout page": CSP default-src 'none', connect-src 'self',
  // frame-ancestors 'none' (no site may frame the page that holds the token).
  it('forbids framing and limits connections to its own origin, on the page and on its 401 page', async () => {
    const o = await createOrder(t, game);
    const pages = [
      await fetch(`${t.url}/checkout/${o.order_token}`),
      await fetch(`${t.url}/checkout/${o.order_token}x`, { headers: { accept: 'text/html' } }),
    ];
    expect(pages.map((r) => r.status)).toEqual([200, 401]);
    for (const r of pages) {
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      const csp = (r.headers.get('content-security-policy') ?? '').split(';').map((d) => d.trim());
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("connect-src 'self'");
      await r.text();
    }
  });
});
