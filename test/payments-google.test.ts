import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { ManualClock } from '../src/lib/clock.js';
import { GoogleConsumer } from '../src/payments/google/consumer.js';
import { minorUnits } from '../src/payments/google/play-api.js';
import {
  oneTimeProductNotification,
  pubsubPush,
  rsaKeyPair,
  startGooglePlay,
  voidedPurchaseNotification,
  type GooglePlayStandIn,
  type PlayPurchase,
} from './helpers/google-play.js';
import { logSink } from './helpers/logs.js';
import { client, createOrder, notificationsOf, orderRow, pay, paymentsOf, type CreatedOrder } from './helpers/orders.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

const PKG = 'com.example.gems';
const SKU = 'gems_60';
const AUDIENCE = 'https://pay.example.com/google-rtdn';

let g: GooglePlayStandIn;
let t: TestService;
let game: TestGame;
const clock = new ManualClock();
const logs = logSink();

beforeAll(async () => {
  g = await startGooglePlay();
  t = await startService({
    clock,
    logDestination: logs.stream,
    env: { LOG_LEVEL: 'info', GOOGLE_API_BASE_URL: g.url, GOOGLE_PUSH_JWKS_URL: g.jwksUrl, GOOGLE_API_TIMEOUT_MS: '1000' },
  });
  game = await googleGame();
});
afterAll(async () => {
  await t?.stop();
  await g?.close();
});

/** A game selling gem_60 as SKU on Google Play, its google channel set with the stand-in's account. */
async function googleGame(settings: Record<string, unknown> = {}): Promise<TestGame> {
  const created = await createGame(t);
  const p = await admin(t, 'PUT', `/admin/v1/games/${created.gameId}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY', store_product_ids: { google: SKU } });
  expect(p.status).toBe(200);
  const c = await admin(t, 'PUT', `/admin/v1/games/${created.gameId}/channels/google`, {
    enabled: true,
    package_name: PKG,
    service_account: g.serviceAccount,
    push_audience: AUDIENCE,
    ...settings,
  });
  expect(c.status, c.text).toBe(200);
  return created;
}

/** Google records a purchase of SKU for the order (purchased, not consumed), as Play Billing would. */
function bought(order: { order_id: string }, p: Partial<PlayPurchase> = {}, sku = SKU): string {
  const token = `tok.${randomBytes(24).toString('base64url')}`;
  const orderId = `GPA.3300-${randomBytes(4).toString('hex')}-${randomBytes(3).toString('hex')}`;
  // US$0.99, as the storefront charged it.
  g.orderTotals.set(orderId, { currencyCode: 'USD', units: '0', nanos: 990_000_000 });
  g.setPurchase(PKG, sku, token, {
    purchaseTimeMillis: String(Date.now()),
    purchaseState: 0,
    consumptionState: 0,
    acknowledgementState: 0,
    orderId,
    obfuscatedExternalAccountId: order.order_id,
    productId: sku,
    quantity: 1,
    regionCode: 'US',
    ...p,
  });
  return token;
}

const submit = (token: string, o?: CreatedOrder, sku = SKU) =>
  client(t, '/v1/client/google/purchases', { purchase_token: token, product_id: sku, ...(o ? { order_token: o.order_token } : {}) });

const consumeCalls = (token: string) => g.calls.filter((c) => c.path.endsWith(`/tokens/${token}:consume`)).length;

async function googleRow(token: string) {
  return t.service.database.db.selectFrom('google_purchases').selectAll().where('purchase_token', '=', token).executeTakeFirst();
}

function consumer(): GoogleConsumer {
  const job = t.service.jobs.find((j) => j instanceof GoogleConsumer);
  if (!job) throw new Error('no Google consume job');
  return job as GoogleConsumer;
}

const push = (gameId: string, body: unknown, token?: string) =>
  fetch(`${t.url}/v1/callbacks/google/${gameId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });

describe('google: the Play Billing action', () => {
  it('POST /v1/client/pay {channel: google} answers the store product, quantity and the order id as obfuscated account id', async () => {
    const o = await createOrder(t, game, { quantity: 1 });
    const r = await pay(t, o.order_token, 'google');
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ order_id: o.order_id, status: 'created', action: { type: 'play_billing', product_id: SKU, quantity: 1, obfuscated_account_id: o.order_id } });
    // Asked again: the same action.
    expect((await pay(t, o.order_token, 'google')).body.action).toEqual(r.body.action);
  });
});

describe('google: purchase submissions', () => {
  it('a valid purchase pays the order once, records the store transaction, then consumes it', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    const r = await submit(token, o);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ order_id: o.order_id, status: 'paid' });
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', is_sandbox: 0 });
    const pays = await paymentsOf(t, o.order_id);
    expect(pays).toMatchObject([
      { provider: 'google', status: 'accepted', provider_txn_id: g.purchase(PKG, SKU, token)!.orderId, environment: 'Production', amount: 600, currency: 'CNY', store_amount: 99, store_currency: 'USD' },
    ]);
    expect(g.purchase(PKG, SKU, token)).toMatchObject({ consumptionState: 1, acknowledgementState: 1 });
    expect(await googleRow(token)).toMatchObject({ state: 'consumed', order_id: o.order_id, game_id: game.gameId });
    const ntfs = await notificationsOf(t, o.order_id);
    expect(ntfs.map((n) => n.type)).toEqual(['ship_order']);
    expect(JSON.parse(ntfs[0]!.body).data.is_sandbox).toBe(false);
    // Every API call carried an access token the stand-in issued for a verified assertion.
    expect(g.calls.every((c) => c.authorized)).toBe(true);
    expect(g.tokenRequests.length).toBeGreaterThan(0);
    expect(g.tokenRequests.every((x) => x.verified)).toBe(true);
  });

  it("an order Google does not price (orders.get failing) is paid all the same, its store price unknown", async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    g.orderTotals.delete(g.purchase(PKG, SKU, token)!.orderId!);
    expect((await submit(token, o)).status).toBe(200);
    expect(await paymentsOf(t, o.order_id)).toMatchObject([{ status: 'accepted', store_amount: null, store_currency: null }]);
  });

  it('a replay (with or without the order token) answers the same and pays and consumes nothing more', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    const first = await submit(token, o);
    const again = await submit(token, o);
    const without = await submit(token);
    expect([again.status, without.status]).toEqual([200, 200]);
    expect(again.body).toEqual(first.body);
    expect(without.body).toEqual(first.body);
    expect(await paymentsOf(t, o.order_id)).toHaveLength(1);
    expect(consumeCalls(token)).toBe(1);
  });

  it('a purchase submitted at a later start without the order token is found through its product', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    const r = await submit(token);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ order_id: o.order_id, status: 'paid' });
  });

  it.each([
    ['pending (purchaseState 2)', { purchaseState: 2 }, /pending/],
    ['canceled (purchaseState 1)', { purchaseState: 1 }, /canceled/],
    ['consumed already (by someone else)', { consumptionState: 1 }, /consumed already/],
    ['made for an unknown order', { obfuscatedExternalAccountId: '999999999' }, /obfuscatedExternalAccountId/],
    ['without an obfuscated account id', { obfuscatedExternalAccountId: undefined }, /obfuscatedExternalAccountId/],
  ])('a purchase %s: 422 payment_rejected, the order unpaid, nothing consumed', async (_name, p, message) => {
    const o = await createOrder(t, game);
    const token = bought(o, p as Partial<PlayPurchase>);
    const r = await submit(token, o);
    expect(r.status, r.text).toBe(422);
    expect(r.body.error).toBe('payment_rejected');
    expect(r.body.message).toMatch(message);
    expect((await orderRow(t, o.order_id)).status).toBe('created');
    expect(await paymentsOf(t, o.order_id)).toHaveLength(0);
    expect(consumeCalls(token)).toBe(0);
  });

  it('the body at its bounds: purchase_token 1..4096, product_id 1..255, order_token 1..1024 characters, both tokens required', async () => {
    const o = await createOrder(t, game);
    const post = (body: unknown) => client(t, '/v1/client/google/purchases', body);
    for (const body of [
      { product_id: SKU },
      { purchase_token: 'x' },
      { purchase_token: '', product_id: SKU },
      { purchase_token: 'x'.repeat(4097), product_id: SKU },
      { purchase_token: 'x', product_id: 'p'.repeat(256) },
      { purchase_token: 'x', product_id: SKU, order_token: 'o'.repeat(1025) },
    ]) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    }
    // At the upper bounds the body is valid: Google is asked, and knows no such purchase.
    expect((await post({ purchase_token: 'x'.repeat(4096), product_id: SKU, order_token: o.order_token })).status).toBe(422);
    expect((await post({ purchase_token: 'x', product_id: 'p'.repeat(255), order_token: o.order_token })).status).toBe(422);
    expect((await post({ purchase_token: 'x', product_id: SKU, order_token: 'o'.repeat(1024) })).status).toBe(401);
  });

  it('a game without an enabled google channel: 403 channel_unavailable, Google not asked', async () => {
    const other = await createGame(t);
    const o = await createOrder(t, other);
    const before = g.calls.length;
    const r = await submit(bought(o), o);
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('channel_unavailable');
    expect(g.calls.length).toBe(before);
  });

  it('a token Google does not know: 422 payment_rejected', async () => {
    const o = await createOrder(t, game);
    const r = await submit('tok.unknown', o);
    expect(r.status).toBe(422);
    expect(r.body.message).toMatch(/does not know this purchase token/);
  });

  it("another product than the order's: 422, kept as a flagged payment, not consumed", async () => {
    const o = await createOrder(t, game);
    const token = bought(o, {}, 'gems_6000');
    const r = await submit(token, o, 'gems_6000');
    expect(r.status, r.text).toBe(422);
    expect(r.body.message).toMatch(/product/);
    expect(await paymentsOf(t, o.order_id)).toMatchObject([{ status: 'flagged', reason: 'product_mismatch' }]);
    expect((await orderRow(t, o.order_id)).status).toBe('created');
    expect(consumeCalls(token)).toBe(0);
    expect(await googleRow(token)).toMatchObject({ state: 'rejected' });
  });

  it('quantity 2 for an order of 1: 422, flagged, not consumed', async () => {
    const o = await createOrder(t, game);
    const token = bought(o, { quantity: 2 });
    const r = await submit(token, o);
    expect(r.status, r.text).toBe(422);
    expect(r.body.message).toMatch(/quantity/);
    expect(await paymentsOf(t, o.order_id)).toMatchObject([{ status: 'flagged', reason: 'quantity_mismatch' }]);
    expect(consumeCalls(token)).toBe(0);
  });

  it("a purchase submitted with another order's token: 422, kept as a flagged payment of that order; its own order paid once", async () => {
    const a = await createOrder(t, game);
    const b = await createOrder(t, game);
    const token = bought(a);
    expect((await submit(token, a)).status).toBe(200);
    const r = await submit(token, b);
    expect(r.status, r.text).toBe(422);
    expect(r.body.error).toBe('payment_rejected');
    expect(await paymentsOf(t, b.order_id)).toMatchObject([{ status: 'flagged', reason: 'transaction_used' }]);
    expect((await orderRow(t, b.order_id)).status).toBe('created');
    expect(await paymentsOf(t, a.order_id)).toMatchObject([{ status: 'accepted' }]);
    // Again: the same refusal, no second flagged row.
    expect((await submit(token, b)).status).toBe(422);
    expect(await paymentsOf(t, b.order_id)).toHaveLength(1);
  });

  it('Google answering 5xx or not at all: 503 with Retry-After, nothing changed; the same submission later succeeds', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    g.faults.push({ status: 500 });
    const failed = await submit(token, o);
    expect(failed.status).toBe(503);
    expect(failed.body.error).toBe('service_unavailable');
    expect(failed.headers.get('retry-after')).toBeTruthy();
    g.faults.push({ status: 200, hang: true });
    expect((await submit(token, o)).status).toBe(503);
    expect((await orderRow(t, o.order_id)).status).toBe('created');
    expect(await googleRow(token)).toBeUndefined();
    const ok = await submit(token, o);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.status).toBe('paid');
  });

  it('a consume that fails after the payment stays owed and the consume job finishes it', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    g.faults.push({ when: /:consume$/, status: 503 });
    const r = await submit(token, o);
    expect(r.status, r.text).toBe(200);
    expect(r.body.status).toBe('paid');
    expect(g.purchase(PKG, SKU, token)!.consumptionState).toBe(0);
    expect(await googleRow(token)).toMatchObject({ state: 'owed' });
    // Not due yet.
    await consumer().runOnce();
    expect(g.purchase(PKG, SKU, token)!.consumptionState).toBe(0);
    clock.advance(31_000);
    await consumer().runOnce();
    expect(g.purchase(PKG, SKU, token)!.consumptionState).toBe(1);
    expect(await googleRow(token)).toMatchObject({ state: 'consumed' });
    expect(await paymentsOf(t, o.order_id)).toHaveLength(1);
  });

  it('a test purchase (purchaseType 0) is a sandbox payment; a game with accept_sandbox false refuses it', async () => {
    const o = await createOrder(t, game);
    const token = bought(o, { purchaseType: 0 });
    const r = await submit(token, o);
    expect(r.status, r.text).toBe(200);
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'paid', is_sandbox: 1 });
    expect(JSON.parse((await notificationsOf(t, o.order_id))[0]!.body).data.is_sandbox).toBe(true);

    const strict = await googleGame({ accept_sandbox: false });
    const s = await createOrder(t, strict);
    const refused = await submit(bought(s, { purchaseType: 0 }), s);
    expect(refused.status).toBe(422);
    expect(refused.body.message).toMatch(/test purchases/);
    expect((await orderRow(t, s.order_id)).status).toBe('created');
  });

  it("the service account's JWT is verified by Google's token endpoint: a wrong key is a 503 and an error log naming the game", async () => {
    const wrong = await googleGame({ service_account: g.wrongKeyAccount });
    const o = await createOrder(t, wrong);
    const token = bought(o);
    const before = g.tokenRequests.length;
    const r = await submit(token, o);
    expect(r.status).toBe(503);
    expect(r.body.message).toMatch(/credentials/);
    expect(g.tokenRequests.slice(before)).toContainEqual({ verified: false, reason: 'Invalid JWT Signature.' });
    expect(logs.lines.some((l) => l.level === 50 && l.game_id === wrong.gameId && /service account/.test(l.msg))).toBe(true);
    expect(JSON.stringify(logs.lines)).not.toContain('PRIVATE KEY');
    expect((await orderRow(t, o.order_id)).status).toBe('created');
  });
});

describe('google: Real-time developer notifications', () => {
  it('a push without a valid OIDC token is refused 401 (missing, wrong audience, expired, another key, another issuer, unknown key)', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    const body = pubsubPush(oneTimeProductNotification(PKG, token, SKU));
    const now = Math.floor(Date.now() / 1000);
    const bad = [
      undefined,
      g.signPushToken({ aud: 'https://elsewhere.example.com' }),
      g.signPushToken({ aud: AUDIENCE, iat: now - 7200, exp: now - 3600 }),
      g.signPushToken({ aud: AUDIENCE }, { key: rsaKeyPair().privateKey }),
      g.signPushToken({ aud: AUDIENCE, iss: 'https://evil.example.com' }),
      g.signPushToken({ aud: AUDIENCE }, { kid: 'unknown-kid' }),
      'not.a.jwt',
    ];
    for (const token of bad) {
      const r = await push(game.gameId, body, token);
      expect(r.status).toBe(401);
    }
    expect((await orderRow(t, o.order_id)).status).toBe('created');
  });

  it('a verified push that is not a Pub/Sub message is 400; a game without the channel 403', async () => {
    const auth = g.signPushToken({ aud: AUDIENCE });
    expect((await push(game.gameId, { message: {} }, auth)).status).toBe(400);
    expect((await push(game.gameId, { message: { data: Buffer.from('not json').toString('base64') } }, auth)).status).toBe(400);
    const other = await createGame(t);
    expect((await push(other.gameId, pubsubPush(oneTimeProductNotification(PKG, 'tok.x', SKU)), auth)).status).toBe(403);
  });

  it('ONE_TIME_PRODUCT_PURCHASED of a purchase no client submitted pays its order and consumes it; the client later gets the same answer', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    const r = await push(game.gameId, pubsubPush(oneTimeProductNotification(PKG, token, SKU)), g.signPushToken({ aud: AUDIENCE }));
    expect(r.status).toBe(204);
    expect((await orderRow(t, o.order_id)).status).toBe('paid');
    expect(g.purchase(PKG, SKU, token)!.consumptionState).toBe(1);
    // Pub/Sub delivers at least once: again, nothing more.
    expect((await push(game.gameId, pubsubPush(oneTimeProductNotification(PKG, token, SKU)), g.signPushToken({ aud: AUDIENCE }))).status).toBe(204);
    const late = await submit(token, o);
    expect(late.status).toBe(200);
    expect(late.body).toEqual({ order_id: o.order_id, status: 'paid' });
    expect(await paymentsOf(t, o.order_id)).toHaveLength(1);
    expect(consumeCalls(token)).toBe(1);
  });

  it('a notification that pays nothing is acknowledged (204); one Google cannot be asked about now is 503 (Pub/Sub retries)', async () => {
    const o = await createOrder(t, game);
    const pending = bought(o, { purchaseState: 2 });
    expect((await push(game.gameId, pubsubPush(oneTimeProductNotification(PKG, pending, SKU)), g.signPushToken({ aud: AUDIENCE }))).status).toBe(204);
    const token = bought(o);
    g.faults.push({ status: 503 });
    expect((await push(game.gameId, pubsubPush(oneTimeProductNotification(PKG, token, SKU)), g.signPushToken({ aud: AUDIENCE }))).status).toBe(503);
    expect((await orderRow(t, o.order_id)).status).toBe('created');
    expect((await push(game.gameId, pubsubPush(oneTimeProductNotification(PKG, token, SKU)), g.signPushToken({ aud: AUDIENCE }))).status).toBe(204);
    expect((await orderRow(t, o.order_id)).status).toBe('paid');
  });

  it('a voided purchase refunds the order; the refund notification follows the ship_order', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    expect((await submit(token, o)).status).toBe(200);
    const googleOrderId = g.purchase(PKG, SKU, token)!.orderId!;
    const r = await push(game.gameId, pubsubPush(voidedPurchaseNotification(PKG, token, googleOrderId)), g.signPushToken({ aud: AUDIENCE }));
    expect(r.status).toBe(204);
    expect((await orderRow(t, o.order_id)).status).toBe('refunded');
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
    // Delivered again: nothing more.
    expect((await push(game.gameId, pubsubPush(voidedPurchaseNotification(PKG, token, googleOrderId)), g.signPushToken({ aud: AUDIENCE }))).status).toBe(204);
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });

  it("a notification of another package, a test notification, or a voided purchase this service never saw: 204, nothing changed", async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    const auth = () => g.signPushToken({ aud: AUDIENCE });
    expect((await push(game.gameId, pubsubPush(oneTimeProductNotification('com.other.app', token, SKU)), auth())).status).toBe(204);
    expect((await push(game.gameId, pubsubPush({ version: '1.0', packageName: PKG, eventTimeMillis: '1', testNotification: { version: '1.0' } }), auth())).status).toBe(204);
    expect((await push(game.gameId, pubsubPush(voidedPurchaseNotification(PKG, 'tok.never-seen', 'GPA.1')), auth())).status).toBe(204);
    expect((await orderRow(t, o.order_id)).status).toBe('created');
  });
});

describe('google: operator refunds', () => {
  it("go through Play's orders.refund; only its success refunds the order", async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    expect((await submit(token, o)).status).toBe(200);
    const googleOrderId = g.purchase(PKG, SKU, token)!.orderId!;

    g.faults.push({ when: /:refund$/, status: 500 });
    const failed = await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, { reason: 'player asked' });
    expect(failed.status).toBe(503);
    expect((await orderRow(t, o.order_id)).status).toBe('paid');
    expect(g.refunds).not.toContain(`${PKG}/${googleOrderId}`);

    const r = await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, { reason: 'player asked' });
    expect(r.status, r.text).toBe(200);
    expect(g.refunds).toContain(`${PKG}/${googleOrderId}`);
    expect((await orderRow(t, o.order_id)).status).toBe('refunded');
  });

  it('a refund Google refuses is a 409 naming Google, and the order stays paid', async () => {
    const o = await createOrder(t, game);
    const token = bought(o);
    expect((await submit(token, o)).status).toBe(200);
    g.faults.push({ when: /:refund$/, status: 400, body: { error: { code: 400, message: 'The order is too old to refund.', status: 'FAILED_PRECONDITION' } } });
    const r = await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, { reason: 'late' });
    expect(r.status).toBe(409);
    expect(r.body.message).toMatch(/Google Play refused the refund.*too old/);
    expect((await orderRow(t, o.order_id)).status).toBe('paid');
  });
});

describe('google: store prices', () => {
  it("Google's Money (units, nanos) in minor units of its currency's ISO digits", () => {
    expect(minorUnits({ currencyCode: 'USD', units: '1', nanos: 990_000_000 })).toEqual({ amount: 199, currency: 'USD' });
    expect(minorUnits({ currencyCode: 'JPY', units: '160', nanos: 0 })).toEqual({ amount: 160, currency: 'JPY' });
    expect(minorUnits({ currencyCode: 'KWD', units: '2', nanos: 500_000_000 })).toEqual({ amount: 2500, currency: 'KWD' });
    expect(minorUnits({ currencyCode: 'EUR', nanos: 500_000_000 })).toEqual({ amount: 50, currency: 'EUR' });
    expect(minorUnits({ units: '1' })).toBeNull();
    expect(minorUnits({ currencyCode: 'USD', units: '1e3' })).toBeNull();
    expect(minorUnits(undefined)).toBeNull();
  });
});

describe('google: settings', () => {
  it('GOOGLE_API_BASE_URL and GOOGLE_PUSH_JWKS_URL must be http(s) URLs; GOOGLE_API_TIMEOUT_MS is 100..60000', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ DATA_DIR: '/tmp', ...env });
        return [];
      } catch (e) {
        return (e as ConfigError).problems;
      }
    };
    expect(problems({ GOOGLE_API_BASE_URL: 'ftp://x' })).toEqual(['GOOGLE_API_BASE_URL must be an absolute http(s) URL (got "ftp://x")']);
    expect(problems({ GOOGLE_PUSH_JWKS_URL: 'nope' })).toEqual(['GOOGLE_PUSH_JWKS_URL must be an absolute http(s) URL (got "nope")']);
    expect(problems({ GOOGLE_API_TIMEOUT_MS: '99' })).toEqual(['GOOGLE_API_TIMEOUT_MS must be an integer from 100 to 60000 (got "99")']);
    const c = loadConfig({ DATA_DIR: '/tmp' });
    expect(c.google).toEqual({ apiBaseUrl: 'https://androidpublisher.googleapis.com', pushJwksUrl: 'https://www.googleapis.com/oauth2/v3/certs', timeoutMs: 10_000 });
  });

  it('a google channel whose private key is not an RSA PEM key is refused 400', async () => {
    const created = await createGame(t);
    const r = await admin(t, 'PUT', `/admin/v1/games/${created.gameId}/channels/google`, {
      enabled: true,
      package_name: PKG,
      service_account: { ...g.serviceAccount, private_key: `-----BEGIN PRIVATE KEY-----\n${'A'.repeat(80)}\n-----END PRIVATE KEY-----\n` },
    });
    expect(r.status).toBe(400);
    expect(r.body.message).toMatch(/private_key/);
  });
});
