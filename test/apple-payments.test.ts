import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeAppleChain, notification, transaction, type TransactionFields } from './helpers/apple.js';
import { client, createOrder, notificationsOf, orderRow, pay, paymentsOf, statusOf, type CreatedOrder } from './helpers/orders.js';
import { Receiver, until } from './helpers/receiver.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * The apple channel (payments.md 1-5) against an App Store played by the test: its own
 * certificate chain (APPLE_ROOT_CERTS names its root) signs transactions and notifications as
 * Apple signs them. The game is a real receiver of the service's signed notifications.
 */
const BUNDLE = 'com.example.game';
const APP_APPLE_ID = 1234567890;
const STORE_ID = 'com.example.gems60';
const apple = makeAppleChain('apple');
const stranger = makeAppleChain('stranger');
const keys = new Map<string, string[]>();
let receiver: Receiver;
let t: TestService;
let game: TestGame;

beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
  t = await startService({ env: { APPLE_ROOT_CERTS: apple.rootDer, NOTIFY_POLL_INTERVAL_MS: '50' } });
  game = await appleGame({ app_apple_id: APP_APPLE_ID });
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

async function appleGame(settings: Record<string, unknown> = {}): Promise<TestGame> {
  const g = await createGame(t);
  keys.set(g.gameId, [g.secret]);
  expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY', store_product_ids: { apple: STORE_ID } })).status).toBe(200);
  const r = await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/channels/apple`, { enabled: true, bundle_id: BUNDLE, ...settings });
  expect(r.status, r.text).toBe(200);
  return g;
}

/** An order and the StoreKit action /v1/client/pay answers for it. */
async function storekitOrder(g: TestGame = game, overrides: Record<string, unknown> = {}): Promise<CreatedOrder & { token: string }> {
  const o = await createOrder(t, g, { notify_url: `${receiver.url}/n/${g.gameId}`, ...overrides });
  const r = await pay(t, o.order_token, 'apple');
  expect(r.status, r.text).toBe(200);
  return { ...o, token: r.body.action.app_account_token };
}

const submit = (body: Record<string, unknown>) => client(t, '/v1/client/apple/transactions', body);
const signed = (fields: Partial<TransactionFields> & { appAccountToken?: string }, chain = apple) => chain.sign(transaction({ bundleId: BUNDLE, productId: STORE_ID, ...fields }));
const callback = (gameId: string, signedPayload: string) => client(t, `/v1/callbacks/apple/${gameId}`, { signedPayload });

describe('POST /v1/client/pay {channel: "apple"}', () => {
  it('answers the StoreKit action: the App Store product id, quantity and the order\'s appAccountToken (the same one when asked again)', async () => {
    const o = await createOrder(t, game, { quantity: 3 });
    const r = await pay(t, o.order_token, 'apple');
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ order_id: o.order_id, status: 'created', action: { type: 'storekit', product_id: STORE_ID, quantity: 3 } });
    expect(r.body.action.app_account_token).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect((await pay(t, o.order_token, 'apple')).body.action.app_account_token).toBe(r.body.action.app_account_token);
  });

  it('403 channel_unavailable when the game has no apple channel, or the product no App Store id', async () => {
    const g = await createGame(t);
    const o = await createOrder(t, g);
    expect((await pay(t, o.order_token, 'apple')).body.error).toBe('channel_unavailable');
    expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/channels/apple`, { enabled: true, bundle_id: BUNDLE })).status).toBe(200);
    const r = await pay(t, o.order_token, 'apple');
    expect([r.status, r.body.error]).toEqual([403, 'channel_unavailable']);
    expect(r.body.message).toContain('store_product_ids.apple');
  });
});

describe('POST /v1/client/apple/transactions', () => {
  it('a valid Sandbox transaction pays the order: sandbox, the store price recorded, the catalogue price kept, ship_order is_sandbox true', async () => {
    const o = await storekitOrder();
    const r = await submit({ signed_transaction: signed({ appAccountToken: o.token, price: 990, currency: 'USD' }) });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ order_id: o.order_id, status: 'paid' });
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', is_sandbox: 1, amount: 600, currency: 'CNY' });
    const pays = await paymentsOf(t, o.order_id);
    expect(pays).toHaveLength(1);
    expect(pays[0]).toMatchObject({ provider: 'apple', status: 'accepted', environment: 'Sandbox', store_amount: 99, store_currency: 'USD', amount: 600, currency: 'CNY', game_id: game.gameId });
    // The operator's order detail shows the channel, the store's transaction, environment and price.
    const detail = await admin(t, 'GET', `/admin/v1/orders/${o.order_id}`);
    expect(detail.body.payments).toMatchObject([{ provider: 'apple', provider_txn_id: pays[0]!.provider_txn_id, environment: 'Sandbox', store_amount: 99, store_currency: 'USD', amount: 600, currency: 'CNY', status: 'accepted', reason: null }]);
    const got = await until('the ship_order at the game', () => receiver.received.find((x) => x.body?.data?.order_id === o.order_id));
    expect(got.body).toMatchObject({ notification_type: 'ship_order', data: { is_sandbox: true, amount: 600, currency: 'CNY' } });
    expect(got.signatureProblem).toBeNull();
  });

  it('a Production transaction (app_apple_id set) pays a real order: is_sandbox false; JPY has no minor digits', async () => {
    const o = await storekitOrder();
    const r = await submit({ signed_transaction: signed({ appAccountToken: o.token, environment: 'Production', price: 160000, currency: 'JPY' }), order_token: o.order_token });
    expect(r.status, r.text).toBe(200);
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', is_sandbox: 0 });
    expect((await paymentsOf(t, o.order_id))[0]).toMatchObject({ environment: 'Production', store_amount: 160, store_currency: 'JPY' });
  });

  it('replay: the same transaction again, with or without order_token, gets the same answer and pays nothing more', async () => {
    const o = await storekitOrder();
    const jws = signed({ appAccountToken: o.token });
    const first = await submit({ signed_transaction: jws });
    expect(first.status).toBe(200);
    for (const body of [{ signed_transaction: jws }, { signed_transaction: jws, order_token: o.order_token }]) {
      const again = await submit(body);
      // The same outcome; the order may have been delivered meanwhile.
      expect(again.status).toBe(200);
      expect(again.body.order_id).toBe(o.order_id);
      expect(['paid', 'delivered']).toContain(again.body.status);
    }
    expect(await paymentsOf(t, o.order_id)).toHaveLength(1);
    expect((await notificationsOf(t, o.order_id)).filter((n) => n.type === 'ship_order')).toHaveLength(1);
  });

  it('a transaction that paid one order, replayed for another: 422 payment_rejected, kept as a flagged payment, the other order unpaid', async () => {
    const a = await storekitOrder();
    const b = await storekitOrder();
    const transactionId = `txn-${a.order_id}`;
    expect((await submit({ signed_transaction: signed({ appAccountToken: a.token, transactionId }) })).status).toBe(200);
    const r = await submit({ signed_transaction: signed({ appAccountToken: b.token, transactionId }) });
    expect([r.status, r.body.error]).toEqual([422, 'payment_rejected']);
    expect(r.body.message).toContain('already paid another order');
    expect(await statusOf(t, b.order_id)).toBe('created');
    const flagged = await paymentsOf(t, b.order_id);
    expect(flagged).toMatchObject([{ provider: 'apple', provider_txn_id: transactionId, status: 'flagged', reason: 'transaction_used' }]);
    expect(JSON.parse(flagged[0]!.detail!)).toMatchObject({ reason: 'transaction_used', paid_order_id: a.order_id });
    // Again: the same refusal, no second flagged row.
    expect((await submit({ signed_transaction: signed({ appAccountToken: b.token, transactionId }) })).status).toBe(422);
    expect(await paymentsOf(t, b.order_id)).toHaveLength(1);
  });

  it('the wrong product or a quantity of 2 (order of 1): 422, flagged, the order unpaid', async () => {
    for (const [fields, reason, words] of [
      [{ productId: 'com.example.gems6000' }, 'product_mismatch', "not the order's product"],
      [{ quantity: 2 }, 'quantity_mismatch', 'quantity differs'],
    ] as const) {
      const o = await storekitOrder();
      const r = await submit({ signed_transaction: signed({ appAccountToken: o.token, ...fields }) });
      expect([reason, r.status, r.body.error]).toEqual([reason, 422, 'payment_rejected']);
      expect(r.body.message).toContain(words);
      expect(await statusOf(t, o.order_id)).toBe('created');
      expect(await paymentsOf(t, o.order_id)).toMatchObject([{ status: 'flagged', reason }]);
    }
  });

  it('the operator lists flagged payments, by game, newest first, page by page', async () => {
    const g = await appleGame({ app_apple_id: APP_APPLE_ID });
    const flagged: string[] = [];
    for (let i = 0; i < 3; i++) {
      const o = await storekitOrder(g);
      expect((await submit({ signed_transaction: signed({ appAccountToken: o.token, quantity: 5 }) })).status).toBe(422);
      flagged.unshift(o.order_id);
    }
    const paid = await storekitOrder(g);
    expect((await submit({ signed_transaction: signed({ appAccountToken: paid.token }) })).status).toBe(200);
    const first = await admin(t, 'GET', `/admin/v1/payments?status=flagged&game_id=${g.gameId}&limit=2`);
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.map((p: { order_id: string }) => p.order_id)).toEqual(flagged.slice(0, 2));
    expect(first.body.data[0]).toMatchObject({ game_id: g.gameId, provider: 'apple', status: 'flagged', reason: 'quantity_mismatch', environment: 'Sandbox' });
    const second = await admin(t, 'GET', `/admin/v1/payments?status=flagged&game_id=${g.gameId}&limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body).toMatchObject({ data: [{ order_id: flagged[2] }], next_cursor: null });
    const all = await admin(t, 'GET', `/admin/v1/payments?game_id=${g.gameId}`);
    expect(all.body.data.map((p: { status: string }) => p.status)).toEqual(['accepted', 'flagged', 'flagged', 'flagged']);
    for (const q of ['status=lost', 'limit=0', 'limit=201', 'cursor=nonsense', 'provider=A', 'unknown=1']) expect([q, (await admin(t, 'GET', `/admin/v1/payments?${q}`)).status]).toEqual([q, 400]);
  });

  it('refused with 422 and what failed: tampered payload, another root, wrong bundle id, unknown or missing appAccountToken, another order\'s token', async () => {
    const o = await storekitOrder();
    const good = signed({ appAccountToken: o.token });
    const [h, p, s] = good.split('.') as [string, string, string];
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, quantity: 1, price: 1 })).toString('base64url')}.${s}`;
    const other = await storekitOrder();
    const cases: [string, Record<string, unknown>, string][] = [
      ['tampered payload', { signed_transaction: tampered }, 'signature does not verify'],
      ['another root', { signed_transaction: signed({ appAccountToken: o.token }, stranger) }, 'signature does not verify'],
      ['wrong bundle id', { signed_transaction: signed({ appAccountToken: o.token, bundleId: 'com.example.other' }) }, 'another app'],
      ['unknown appAccountToken', { signed_transaction: signed({ appAccountToken: '6b1a4a4e-7d5e-4a8e-9e0e-000000000000' }) }, 'names no order'],
      ['no appAccountToken', { signed_transaction: signed({}) }, 'carries no appAccountToken'],
      ["another order's order_token", { signed_transaction: good, order_token: other.order_token }, "another order's"],
      ['Xcode data not signed by a listed root', { signed_transaction: signed({ appAccountToken: o.token, environment: 'Xcode' }, stranger) }, 'signature does not verify'],
    ];
    for (const [what, body, words] of cases) {
      const r = await submit(body);
      expect([what, r.status, r.body?.error]).toEqual([what, 422, 'payment_rejected']);
      expect(r.body.message, what).toContain(words);
    }
    expect(await statusOf(t, o.order_id)).toBe('created');
    expect(await paymentsOf(t, o.order_id)).toEqual([]);
  });

  it('Production without app_apple_id, and Sandbox when accept_sandbox is false: 422 saying so', async () => {
    const noAppId = await appleGame();
    const o = await storekitOrder(noAppId);
    const r = await submit({ signed_transaction: signed({ appAccountToken: o.token, environment: 'Production' }) });
    expect([r.status, r.body.error]).toEqual([422, 'payment_rejected']);
    expect(r.body.message).toContain('app_apple_id');

    const noSandbox = await appleGame({ app_apple_id: APP_APPLE_ID, accept_sandbox: false });
    const s = await storekitOrder(noSandbox);
    for (const environment of ['Sandbox', 'Xcode'] as const) {
      const q = await submit({ signed_transaction: signed({ appAccountToken: s.token, environment }) });
      expect([environment, q.status, q.body.error]).toEqual([environment, 422, 'payment_rejected']);
      expect(q.body.message).toContain('accept_sandbox');
    }
    expect(await statusOf(t, s.order_id)).toBe('created');
    // Production is accepted there.
    expect((await submit({ signed_transaction: signed({ appAccountToken: s.token, environment: 'Production' }) })).status).toBe(200);
  });

  it('Xcode data chained to a listed root is a sandbox payment', async () => {
    const o = await storekitOrder();
    expect((await submit({ signed_transaction: signed({ appAccountToken: o.token, environment: 'Xcode' }) })).status).toBe(200);
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', is_sandbox: 1 });
  });

  it('401 for a bad order_token; 403 when the channel is disabled; 409 for a canceled order (payment kept)', async () => {
    const o = await storekitOrder();
    const jws = signed({ appAccountToken: o.token });
    expect((await submit({ signed_transaction: jws, order_token: `${o.order_token}x` })).status).toBe(401);
    const g = await appleGame({ app_apple_id: APP_APPLE_ID });
    const d = await storekitOrder(g);
    expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/channels/apple`, { enabled: false, bundle_id: BUNDLE })).status).toBe(200);
    expect((await submit({ signed_transaction: signed({ appAccountToken: d.token }) })).body.error).toBe('channel_unavailable');
    expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/cancel`, {})).status).toBe(200);
    const r = await submit({ signed_transaction: jws });
    expect([r.status, r.body.error]).toEqual([409, 'invalid_state']);
    expect(await paymentsOf(t, o.order_id)).toMatchObject([{ status: 'flagged', reason: 'order_canceled' }]);
  });

  it('400 for a body out of bounds or not a JWS', async () => {
    for (const body of [{}, { signed_transaction: '' }, { signed_transaction: 'x'.repeat(32_769) }, { signed_transaction: 'not-a-jws' }, { signed_transaction: 'a.b.c' }, { signed_transaction: 1 }, { signed_transaction: 'a.b.c', extra: 1 }]) {
      const r = await submit(body);
      expect([JSON.stringify(body).slice(0, 60), r.status]).toEqual([JSON.stringify(body).slice(0, 60), 400]);
    }
  });
});

describe('App Store Server Notifications V2 at /v1/callbacks/apple/:game_id', () => {
  const note = (type: string, signedTransactionInfo?: string, extra: Record<string, unknown> = {}, chain = apple) =>
    chain.sign(notification(type, { bundleId: BUNDLE, appAppleId: APP_APPLE_ID, ...(signedTransactionInfo ? { signedTransactionInfo } : {}), ...extra }));

  it('REFUND after ship_order refunds the order; the game gets its refund notification after its ship_order; a repeat changes nothing', async () => {
    const o = await storekitOrder();
    const jws = signed({ appAccountToken: o.token });
    expect((await submit({ signed_transaction: jws })).status).toBe(200);
    await until('the order delivered', async () => (await statusOf(t, o.order_id)) === 'delivered' || undefined);
    // payments.md 5: the operator cannot refund an App Store purchase; Apple does.
    const byOperator = await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, { reason: 'asked' });
    expect([byOperator.status, byOperator.body.error]).toEqual([409, 'invalid_state']);
    expect(byOperator.body.message).toContain('refunded by Apple');
    const r = await callback(game.gameId, note('REFUND', jws));
    expect(r.status, r.text).toBe(200);
    expect(await statusOf(t, o.order_id)).toBe('refunded');
    const got = await until('the refund at the game', () => {
      const mine = receiver.received.filter((x) => x.body?.data?.order_id === o.order_id);
      return mine.some((x) => x.body.notification_type === 'refund') ? mine : undefined;
    });
    expect(got.map((x) => x.body.notification_type)).toEqual(['ship_order', 'refund']);
    expect(got[1]!.signatureProblem).toBeNull();
    expect((await callback(game.gameId, note('REFUND', jws))).status).toBe(200);
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });

  it('REVOKE refunds too; the refund waits for a ship_order not yet delivered', async () => {
    receiver.script(`/n/${game.gameId}/slow`, (_r, n) => (n === 0 ? { kind: 'status', status: 500, body: '' } : { kind: 'status', status: 200, body: '{"ok":true}' }));
    const o = await storekitOrder(game, { notify_url: `${receiver.url}/n/${game.gameId}/slow` });
    const jws = signed({ appAccountToken: o.token });
    expect((await submit({ signed_transaction: jws })).status).toBe(200);
    expect((await callback(game.gameId, note('REVOKE', jws))).status).toBe(200);
    expect(await statusOf(t, o.order_id)).toBe('refunded');
    const ntfs = await notificationsOf(t, o.order_id);
    expect(ntfs.map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });

  it('TEST and other types are answered 200 and change nothing; a transaction that paid no order is 200', async () => {
    expect((await callback(game.gameId, note('TEST'))).status).toBe(200);
    expect((await callback(game.gameId, note('CONSUMPTION_REQUEST', signed({}))) ).status).toBe(200);
    expect((await callback(game.gameId, note('REFUND', signed({ transactionId: 'never-paid' })))).status).toBe(200);
  });

  it('refused: another root (422), wrong bundle id (422), a game without apple channel (404), not a JWS (400)', async () => {
    const o = await storekitOrder();
    const jws = signed({ appAccountToken: o.token });
    expect((await submit({ signed_transaction: jws })).status).toBe(200);
    const foreign = await callback(game.gameId, note('REFUND', jws, {}, stranger));
    expect([foreign.status, foreign.body.error]).toEqual([422, 'payment_rejected']);
    const wrongApp = await callback(game.gameId, note('REFUND', jws, { bundleId: 'com.example.other' }));
    expect([wrongApp.status, wrongApp.body.error]).toEqual([422, 'payment_rejected']);
    const plain = await createGame(t);
    expect((await callback(plain.gameId, note('REFUND', jws))).status).toBe(404);
    expect((await callback(game.gameId, 'nope')).status).toBe(400);
    expect(await statusOf(t, o.order_id)).not.toBe('refunded');
  });

  it('needs no signature of ours and takes no Authorization', async () => {
    const r = await client(t, `/v1/callbacks/apple/${game.gameId}`, { signedPayload: note('TEST') }, { authorization: 'Bearer whatever' });
    expect(r.status).toBe(200);
  });
});
