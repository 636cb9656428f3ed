import { createVerify, generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beijingDate, beijingDayStart } from '../src/lib/beijing-time.js';
import { ManualClock } from '../src/lib/clock.js';
import { client, notificationsOf, orderRow, paymentsOf, statusOf } from './helpers/orders.js';
import { Receiver, until } from './helpers/receiver.js';
import { runCli } from './helpers/cli.js';
import { admin, ADMIN_TOKEN, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';
import { WechatPayStandIn, type Transaction } from './helpers/wechatpay.js';

/**
 * The wechat channel (payments.md 2-5) against WeChat Pay played by a stand-in on loopback
 * (test/helpers/wechatpay.ts): merchant signatures checked on every request, signed answers,
 * signed and encrypted callbacks. The service runs on a manual clock, so the lost-callback
 * job's growing intervals and order expiry are reached without sleeping.
 */
const PUBLIC = 'https://pay.example.com';
const clock = new ManualClock(Date.now());
const wx = new WechatPayStandIn(() => clock.now());
const keys = new Map<string, string[]>();
let receiver: Receiver;
let t: TestService;
let game: TestGame;

beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => clock.now() }).start();
  await wx.start();
  t = await startService({ clock, env: { WECHATPAY_BASE_URL: wx.url, PUBLIC_BASE_URL: PUBLIC, NOTIFY_POLL_INTERVAL_MS: '50', SWEEP_INTERVAL_MS: '600000' } });
  wx.deliverTo = (u) => t.url + new URL(u).pathname;
  game = await wechatGame();
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
  await wx?.close();
});

async function wechatGame(settings: Record<string, unknown> = {}): Promise<TestGame> {
  const g = await createGame(t);
  keys.set(g.gameId, [g.secret]);
  const r = await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/channels/wechat`, wx.settings(settings));
  expect(r.status, r.text).toBe(200);
  return g;
}

async function newOrder(g: TestGame = game, overrides: Record<string, unknown> = {}) {
  const r = await signed(t, g, 'POST', '/v1/server/create-order', orderBody({ notify_url: `${receiver.url}/n/${g.gameId}`, ...overrides }), {}, clock.now());
  expect(r.status, r.text).toBe(200);
  return r.body as { order_id: string; order_token: string; expires_at: number };
}

const pay = (token: string, mode?: string) => client(t, '/v1/client/pay', { order_token: token, channel: 'wechat', ...(mode ? { mode } : {}) });

/** An order with a Native payment open at WeChat Pay. */
async function openOrder(g: TestGame = game) {
  const o = await newOrder(g);
  const r = await pay(o.order_token);
  expect(r.status, r.text).toBe(200);
  return { ...o, txn: wx.transactions.get(o.order_id) as Transaction };
}

/** An order paid by WeChat Pay's callback, its ship_order delivered. */
async function paidOrder() {
  const o = await openOrder();
  expect((await wx.paymentCallback(wx.pay(o.order_id))).status).toBe(204);
  await until('delivered', async () => (await statusOf(t, o.order_id)) === 'delivered');
  return o;
}

const refund = (orderId: string, body: Record<string, unknown> = { reason: 'player asked' }) => admin(t, 'POST', `/admin/v1/orders/${orderId}/refund`, body);
const typesAtGame = (orderId: string) => receiver.received.filter((x) => x.body?.data?.order_id === orderId).map((x) => x.body.notification_type as string);

describe('channel settings', () => {
  it('keeps the merchant key and APIv3 key write-only and gives the callback URL to register', async () => {
    const r = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/channels/wechat`);
    expect(r.body).toMatchObject({ mchid: wx.mchid, appid: wx.appid, merchant_private_key: '***', api_v3_key: '***', callback_url: `${PUBLIC}/v1/callbacks/wechat/${game.gameId}` });
    expect(r.text).not.toContain(wx.apiV3Key);
  });

  it('refuses keys that are not PEM keys, an APIv3 key of another length, unknown fields', async () => {
    const g = await createGame(t);
    const put = (o: Record<string, unknown>) => admin(t, 'PUT', `/admin/v1/games/${g.gameId}/channels/wechat`, wx.settings(o));
    expect((await put({ merchant_private_key: `-----BEGIN PRIVATE KEY-----\n${'A'.repeat(64)}\n-----END PRIVATE KEY-----` })).status).toBe(400);
    expect((await put({ api_v3_key: 'x'.repeat(31) })).status).toBe(400);
    expect((await put({ api_v3_key: 'x'.repeat(33) })).status).toBe(400);
    expect((await put({ mchid: '12ab' })).status).toBe(400);
    expect((await put({ extra: 1 })).status).toBe(400);
  });
});

describe('POST /v1/client/pay {channel: "wechat"}', () => {
  it('native (default): a QR code_url; out_trade_no is the order id, amount in fen; the same action when asked again', async () => {
    const o = await newOrder();
    const r = await pay(o.order_token);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ order_id: o.order_id, status: 'created', action: { type: 'qr' } });
    const txn = wx.transactions.get(o.order_id)!;
    expect(r.body.action.code_url).toBe(txn.answer.code_url);
    expect(txn.request).toMatchObject({ appid: wx.appid, mchid: wx.mchid, out_trade_no: o.order_id, amount: { total: 600, currency: 'CNY' }, notify_url: `${PUBLIC}/v1/callbacks/wechat/${game.gameId}` });
    expect(txn.request.time_expire).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+08:00$/);
    const calls = wx.requests.length;
    expect((await pay(o.order_token, 'native')).body.action).toEqual(r.body.action);
    expect(wx.requests.length).toBe(calls);
    expect(wx.requests.every((x) => x.signed)).toBe(true);
  });

  it("h5: a redirect to WeChat Pay's h5_url, with the client's address as payer_client_ip", async () => {
    const o = await newOrder();
    const r = await pay(o.order_token, 'h5');
    expect(r.status, r.text).toBe(200);
    const txn = wx.transactions.get(o.order_id)!;
    expect(r.body.action).toEqual({ type: 'redirect', url: txn.answer.h5_url });
    expect(txn.request.scene_info).toEqual({ payer_client_ip: '127.0.0.1', h5_info: { type: 'Wap' } });
  });

  it("app: the Open SDK's PayReq, signed with the merchant key over appid, timestamp, noncestr and prepay_id", async () => {
    const o = await newOrder();
    const r = await pay(o.order_token, 'app');
    expect(r.status, r.text).toBe(200);
    const p = r.body.action.params;
    expect(r.body.action.type).toBe('wechat_app');
    expect(p).toMatchObject({ appid: wx.appid, partnerid: wx.mchid, prepayid: wx.transactions.get(o.order_id)!.answer.prepay_id, package: 'Sign=WXPay' });
    expect(p.noncestr).toMatch(/^[0-9A-F]{32}$/);
    expect(Math.abs(Number(p.timestamp) - clock.now() / 1000)).toBeLessThan(2);
    const ok = createVerify('RSA-SHA256').update(`${p.appid}\n${p.timestamp}\n${p.noncestr}\n${p.prepayid}\n`).verify(wx.merchant.publicKey, p.sign, 'base64');
    expect(ok).toBe(true);
  });

  it('400 for an unknown mode or one out of bounds; 403 for an order not in CNY; 403 without the channel', async () => {
    const o = await newOrder();
    for (const mode of ['jsapi', 'x'.repeat(17), 'NATIVE', 'na tive']) {
      const r = await pay(o.order_token, mode);
      expect([r.status, r.body.error], mode).toEqual([400, 'invalid_request']);
    }
    expect((await pay(o.order_token, 'jsapi')).body.message).toContain('native, h5, app');
    expect((await client(t, '/v1/client/pay', { order_token: o.order_token, channel: 'sandbox', mode: 'native' })).status).toBe(400);
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/gem_usd`, { name: 'USD gems', price: 99, currency: 'USD' })).status).toBe(200);
    const usd = await newOrder(game, { product_id: 'gem_usd' });
    const r = await pay(usd.order_token);
    expect([r.status, r.body.error]).toEqual([403, 'channel_unavailable']);
    expect(r.body.message).toContain('CNY');
    const other = await createGame(t);
    const o2 = await newOrder(other);
    expect((await pay(o2.order_token)).body.error).toBe('channel_unavailable');
  });
});

describe('callbacks at /v1/callbacks/wechat/:game_id', () => {
  it('TRANSACTION.SUCCESS pays the order (ship_order sent); the same callback ten times is one payment', async () => {
    const o = await openOrder();
    const txn = wx.pay(o.order_id);
    for (let i = 0; i < 10; i++) {
      const r = await wx.paymentCallback(txn);
      expect(r.status, r.text).toBe(204);
    }
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: expect.stringMatching(/^(paid|delivered)$/), is_sandbox: 0 });
    const pays = await paymentsOf(t, o.order_id);
    expect(pays.map((p) => [p.provider, p.provider_txn_id, p.amount, p.currency, p.status])).toEqual([['wechat', txn.transaction_id, 600, 'CNY', 'accepted']]);
    await until('ship_order at the game', () => typesAtGame(o.order_id).includes('ship_order'));
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order']);
  });

  it('refused with {code: "FAIL"} and nothing paid: tampered body, old or future timestamp, wrong serial, a forged key, another APIv3 key', async () => {
    const o = await openOrder();
    const txn = wx.pay(o.order_id);
    const forger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const now = Math.floor(clock.now() / 1000);
    const cases = [
      { tamper: (b: string) => b.replace('TRANSACTION.SUCCESS', 'TRANSACTION.SUCCESS ') },
      { timestamp: now - 301 },
      { timestamp: now + 301 },
      { serial: 'PUB_KEY_ID_0000000000000000' },
      { signingKey: forger },
    ];
    for (const c of cases) {
      const r = await wx.paymentCallback(txn, c);
      expect([r.status, r.body?.code], JSON.stringify(Object.keys(c))).toEqual([401, 'FAIL']);
      expect(r.body.message).toMatch(/Wechatpay-/);
    }
    const badKey = await wx.paymentCallback(txn, { apiV3Key: 'k'.repeat(32) });
    expect([badKey.status, badKey.body.code]).toEqual([400, 'FAIL']);
    // The edges of the window are accepted.
    expect(await statusOf(t, o.order_id)).toBe('created');
    expect((await wx.paymentCallback(txn, { timestamp: now - 300 })).status).toBe(204);
    expect(await statusOf(t, o.order_id)).not.toBe('created');
  });

  it("another merchant's or app's transaction is refused; an amount that differs is flagged, the order not paid", async () => {
    const o = await openOrder();
    const txn = wx.pay(o.order_id);
    for (const resource of [{ mchid: '1900000001' }, { appid: 'wx0000000000000000' }]) {
      const r = await wx.paymentCallback(txn, { resource });
      expect([r.status, r.body.code]).toEqual([422, 'FAIL']);
    }
    expect(await paymentsOf(t, o.order_id)).toEqual([]);
    wx.pay(o.order_id, 599);
    expect((await wx.paymentCallback(txn)).status).toBe(204);
    expect(await statusOf(t, o.order_id)).toBe('created');
    expect((await paymentsOf(t, o.order_id)).map((p) => [p.status, p.reason, p.amount])).toEqual([['flagged', 'amount_mismatch', 599]]);
  });

  it('404 {code: "FAIL"} for a game without the channel; other events are acknowledged', async () => {
    const o = await openOrder();
    const other = await createGame(t);
    const r = await wx.callback(`${PUBLIC}/v1/callbacks/wechat/${other.gameId}`, 'TRANSACTION.SUCCESS', wx.resourceOf(wx.pay(o.order_id)));
    expect([r.status, r.body.code]).toEqual([404, 'FAIL']);
    expect((await wx.callback(`${PUBLIC}/v1/callbacks/wechat/${game.gameId}`, 'SOMETHING.ELSE', { a: 1 })).status).toBe(204);
  });
});

describe('lost callbacks: the service queries open payments', () => {
  it('pays the order when WeChat Pay says SUCCESS and the callback never came; a later callback changes nothing', async () => {
    const o = await openOrder();
    const job = t.service.providerPaymentJob;
    clock.advance(10_000);
    expect((await job.runOnce()).payments).toBeGreaterThanOrEqual(1);
    expect(await statusOf(t, o.order_id)).toBe('created');
    const queries = wx.requests.filter((x) => x.method === 'GET' && x.url.includes(o.order_id));
    expect(queries.length).toBe(1);
    // Not due again before the next, longer interval.
    clock.advance(10_000);
    await job.runOnce();
    expect(wx.requests.filter((x) => x.method === 'GET' && x.url.includes(o.order_id)).length).toBe(1);
    const txn = wx.pay(o.order_id);
    clock.advance(20_000);
    await job.runOnce();
    expect(await statusOf(t, o.order_id)).not.toBe('created');
    expect((await wx.paymentCallback(txn)).status).toBe(204);
    expect((await paymentsOf(t, o.order_id)).map((p) => p.status)).toEqual(['accepted']);
    await until('ship_order at the game', () => typesAtGame(o.order_id).includes('ship_order'));
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order']);
  });

  it('two instances checking at once query each payment once', async () => {
    const other = await startService({ clock, db: t.db, env: { WECHATPAY_BASE_URL: wx.url, PUBLIC_BASE_URL: PUBLIC, SWEEP_INTERVAL_MS: '600000' } });
    try {
      const orders = [await openOrder(), await openOrder(), await openOrder()];
      clock.advance(10_000);
      const before = wx.requests.length;
      const [a, b] = await Promise.all([t.service.providerPaymentJob.runOnce(), other.service.providerPaymentJob.runOnce()]);
      expect(a.payments + b.payments).toBeGreaterThanOrEqual(3);
      const queries = wx.requests.slice(before).filter((x) => x.method === 'GET');
      for (const o of orders) expect(queries.filter((x) => x.url.includes(o.order_id)).length).toBe(1);
      expect(new Set(queries.map((x) => x.url)).size).toBe(queries.length);
    } finally {
      await other.stop();
    }
  });

  it("closes the provider's payment of a canceled order", async () => {
    const o = await openOrder();
    expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/cancel`, {})).status).toBe(200);
    await until('the check made due', async () => (await t.service.database.db.selectFrom('provider_payments').select('next_check_at').where('order_id', '=', o.order_id).executeTakeFirstOrThrow()).next_check_at <= clock.now());
    await t.service.providerPaymentJob.runOnce();
    expect(wx.transactions.get(o.order_id)!.trade_state).toBe('CLOSED');
    expect(wx.requests.some((x) => x.url === `/v3/pay/transactions/out-trade-no/${o.order_id}/close` && x.body.mchid === wx.mchid)).toBe(true);
  });
});

describe('refunds that return money (POST /admin/v1/orders/:id/refund)', () => {
  it('refund_pending until WeChat Pay confirms by callback; then refunded and the refund notification after ship_order', async () => {
    const o = await paidOrder();
    const r = await refund(o.order_id);
    expect(r.status, r.text).toBe(200);
    expect(r.body.status).toBe('refund_pending');
    const req = wx.requests.find((x) => x.url === '/v3/refund/domestic/refunds' && x.body.transaction_id === o.txn.transaction_id)!;
    expect(req.body).toMatchObject({ amount: { refund: 600, total: 600, currency: 'CNY' }, reason: 'player asked', notify_url: `${PUBLIC}/v1/callbacks/wechat/${game.gameId}` });
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order']);
    // Asked again while pending: 409.
    expect((await refund(o.order_id)).status).toBe(409);
    const rf = wx.refunds.get(req.body.out_refund_no)!;
    rf.status = 'SUCCESS';
    for (let i = 0; i < 3; i++) expect((await wx.refundCallback(rf)).status).toBe(204);
    expect(await statusOf(t, o.order_id)).toBe('refunded');
    await until('the refund at the game', () => typesAtGame(o.order_id).includes('refund'));
    expect(typesAtGame(o.order_id)).toEqual(['ship_order', 'refund']);
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });

  it('refund confirmed by query when the refund callback never comes', async () => {
    const o = await paidOrder();
    expect((await refund(o.order_id)).body.status).toBe('refund_pending');
    const out = wx.requests.filter((x) => x.url === '/v3/refund/domestic/refunds').at(-1)!.body.out_refund_no as string;
    clock.advance(10_000);
    await t.service.providerPaymentJob.runOnce();
    expect(await statusOf(t, o.order_id)).toBe('refund_pending');
    wx.refunds.get(out)!.status = 'SUCCESS';
    clock.advance(30_000);
    expect((await t.service.providerPaymentJob.runOnce()).refunds).toBe(1);
    expect(await statusOf(t, o.order_id)).toBe('refunded');
    expect(wx.requests.filter((x) => x.method === 'GET' && x.url === `/v3/refund/domestic/refunds/${out}`).length).toBe(2);
  });

  it('refused by WeChat Pay: refund_failed with its reason, and requested again successfully', async () => {
    const o = await paidOrder();
    wx.refundBehaviour = { kind: 'refuse', status: 403, code: 'NOT_ENOUGH', message: '基本账户余额不足' };
    try {
      const r = await refund(o.order_id);
      expect(r.status, r.text).toBe(200);
      expect(r.body.status).toBe('refund_failed');
      const detail = await admin(t, 'GET', `/admin/v1/orders/${o.order_id}`);
      expect(JSON.stringify(detail.body.events)).toContain('NOT_ENOUGH');
      wx.refundBehaviour = { kind: 'success' };
      const again = await refund(o.order_id);
      expect(again.body.status).toBe('refunded');
    } finally {
      wx.refundBehaviour = { kind: 'processing' };
    }
    await until('the refund at the game', () => typesAtGame(o.order_id).includes('refund'));
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });

  it('REFUND.ABNORMAL of our refund: refund_failed; a SUCCESS reported later for it still refunds the order', async () => {
    const o = await paidOrder();
    await refund(o.order_id);
    const out = wx.requests.filter((x) => x.url === '/v3/refund/domestic/refunds').at(-1)!.body.out_refund_no as string;
    const rf = wx.refunds.get(out)!;
    rf.status = 'ABNORMAL';
    expect((await wx.refundCallback(rf, 'REFUND.ABNORMAL')).status).toBe(204);
    expect(await statusOf(t, o.order_id)).toBe('refund_failed');
    expect(typesAtGame(o.order_id)).toEqual(['ship_order']);
    // The merchant settles the abnormal refund by hand: WeChat Pay then reports it SUCCESS.
    rf.status = 'SUCCESS';
    expect((await wx.refundCallback(rf, 'REFUND.SUCCESS')).status).toBe(204);
    expect(await statusOf(t, o.order_id)).toBe('refunded');
    await until('the refund at the game', () => typesAtGame(o.order_id).includes('refund'));
  });

  it('a refund made in the merchant portal refunds the order (once); a partial one does not', async () => {
    const o = await paidOrder();
    const partial = wx.portalRefund(o.order_id, 100);
    expect((await wx.refundCallback(partial)).status).toBe(204);
    expect(await statusOf(t, o.order_id)).toBe('delivered');
    const whole = wx.portalRefund(o.order_id);
    expect((await wx.refundCallback(whole)).status).toBe(204);
    expect((await wx.refundCallback(whole)).status).toBe(204);
    expect(await statusOf(t, o.order_id)).toBe('refunded');
    await until('the refund at the game', () => typesAtGame(o.order_id).includes('refund'));
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });

  it('partial refunds are refused with 400; the whole amount is accepted', async () => {
    const o = await paidOrder();
    for (const amount of [1, 599, 601]) {
      const r = await refund(o.order_id, { amount });
      expect([r.status, r.body.error]).toEqual([400, 'invalid_request']);
      expect(r.body.message).toContain('partial refunds');
    }
    expect((await refund(o.order_id, { amount: 0 })).status).toBe(400);
    expect((await refund(o.order_id, { amount: 600 })).body.status).toBe('refund_pending');
  });
});

describe('expiry', () => {
  it("queries a last time at expiry and closes the provider's payment", async () => {
    const o = await openOrder();
    // expires_at is Unix seconds (rounded down): the order's own expiry is within the next second.
    clock.set(o.expires_at * 1000 - 1);
    await t.service.providerPaymentJob.runOnce();
    expect(wx.transactions.get(o.order_id)!.trade_state).toBe('NOTPAY');
    clock.set((o.expires_at + 1) * 1000);
    await t.service.providerPaymentJob.runOnce();
    expect(wx.transactions.get(o.order_id)!.trade_state).toBe('CLOSED');
    const row = await t.service.database.db.selectFrom('provider_payments').selectAll().where('order_id', '=', o.order_id).executeTakeFirstOrThrow();
    expect(row.state).toBe('closed');
    const calls = wx.requests.length;
    clock.advance(3_600_000);
    await t.service.providerPaymentJob.runOnce();
    expect(wx.requests.slice(calls).some((x) => x.url.includes(o.order_id))).toBe(false);
  });
});

describe('reconciliation (POST/GET /admin/v1/reconciliations)', () => {
  const DAY = 86_400_000;
  const reconcile = (body: Record<string, unknown>) => admin(t, 'POST', '/admin/v1/reconciliations', body);

  it("compares WeChat Pay's trade bill of a day with the payments: missing ones applied, others listed, amounts that differ", async () => {
    // Noon of a Beijing day, then the next day's morning to reconcile it.
    clock.set(beijingDayStart(clock.now()) + DAY + 12 * 3_600_000);
    const date = beijingDate(clock.now());
    const g = await wechatGame();
    const paidBy = async () => {
      const o = await openOrder(g);
      expect((await wx.paymentCallback(wx.pay(o.order_id))).status).toBe(204);
      return o;
    };
    const [matched, differs, unlisted] = [await paidBy(), await paidBy(), await paidBy()];
    const lost = await openOrder(g);
    wx.pay(lost.order_id);
    const row = (o: { txn: Transaction }, total = 600) => ({ transaction_id: o.txn.transaction_id, out_trade_no: o.txn.out_trade_no, total });
    wx.bills.set(date, [row(matched), row(differs, 500), row(lost)]);
    clock.set(beijingDayStart(clock.now()) + DAY + 3_600_000);

    const r = await reconcile({ channel: 'wechat', game_id: g.gameId, date });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ channel: 'wechat', game_id: g.gameId, date, status: 'differences', counts: { statement: 3, recorded: 3, differences: 3 }, error: null });
    const byKind = Object.fromEntries(r.body.differences.map((d: any) => [d.kind, d]));
    expect(byKind.missing_payment).toMatchObject({ order_id: lost.order_id, statement_amount: 600, applied: 'accepted' });
    expect(byKind.amount_differs).toMatchObject({ order_id: differs.order_id, statement_amount: 500, recorded_amount: 600 });
    expect(byKind.not_in_statement).toMatchObject({ order_id: unlisted.order_id, recorded_amount: 600 });
    expect(await orderRow(t, lost.order_id)).toMatchObject({ status: expect.stringMatching(/^(paid|delivered)$/), late_payment: 1 });
    expect(wx.requests.filter((x) => x.url.startsWith('/v3/bill')).every((x) => x.signed)).toBe(true);

    // Again: the missing payment is recorded now.
    const again = await reconcile({ channel: 'wechat', game_id: g.gameId, date });
    expect(again.body.differences.map((d: any) => d.kind).sort()).toEqual(['amount_differs', 'not_in_statement']);
    expect((await paymentsOf(t, lost.order_id)).length).toBe(1);
    const list = await admin(t, 'GET', `/admin/v1/reconciliations?game_id=${g.gameId}`);
    expect(list.body.data.map((x: any) => x.reconciliation_id)).toEqual([again.body.reconciliation_id, r.body.reconciliation_id]);

    // The CLI's reconcile is the same call.
    const cli = await runCli(['reconcile', '--channel', 'wechat', '--game', g.gameId, '--date', date], { COMBO_URL: t.url, ADMIN_TOKEN });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`wechat ${g.gameId} ${date}: differences`);
    expect(cli.stdout).toContain('amount_differs');
    expect((await runCli(['reconcile', '--channel', 'wechat', '--game', g.gameId, '--date', '28-11-2026'], { COMBO_URL: t.url, ADMIN_TOKEN })).code).not.toBe(0);

    // A day without a bill and without payments matches.
    const empty = await reconcile({ channel: 'wechat', game_id: g.gameId, date: beijingDate(clock.now() - 3 * DAY) });
    expect(empty.body).toMatchObject({ status: 'matched', counts: { statement: 0, recorded: 0, differences: 0 } });
  });

  it('refuses today, malformed dates, a channel without statements, a game without the channel', async () => {
    expect((await reconcile({ channel: 'wechat', game_id: game.gameId, date: beijingDate(clock.now()) })).status).toBe(400);
    for (const date of ['2026-1-01', '20260101', '2026-01-01T00', '']) expect((await reconcile({ channel: 'wechat', game_id: game.gameId, date })).status, date).toBe(400);
    expect((await reconcile({ channel: 'sandbox', game_id: game.gameId, date: '2026-01-01' })).status).toBe(400);
    const other = await createGame(t);
    expect((await reconcile({ channel: 'wechat', game_id: other.gameId, date: '2026-01-01' })).status).toBe(404);
    expect((await reconcile({ channel: 'wechat', game_id: game.gameId, date: '2026-01-01', extra: 1 })).status).toBe(400);
  });
});
