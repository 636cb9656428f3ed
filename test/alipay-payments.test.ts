import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeAlipayApp, paramsOf, postForm, signedByApp, type AlipayApp, type Trade } from './helpers/alipay.js';
import { AlipayFixture } from './helpers/alipay-service.js';
import { client, createOrder, notificationsOf, orderRow, paymentsOf, statusOf, type CreatedOrder } from './helpers/orders.js';
import { until, type Receiver } from './helpers/receiver.js';
import { admin, createGame, type TestGame, type TestService } from './helpers/service.js';

/**
 * The alipay channel (payments.md 1-5) against an Alipay stand-in (test/helpers/alipay.ts): a
 * local OpenAPI gateway with its own RSA key pair that checks the application's RSA2
 * signatures and signs its answers and notifies. The game is a real receiver of the service's
 * signed notifications.
 */
const f = new AlipayFixture();
const { alipay, app } = f;
let receiver: Receiver;
let t: TestService;
let game: TestGame;

beforeAll(async () => {
  await f.start({ PUBLIC_BASE_URL: 'http://127.0.0.1:1' });
  ({ t, receiver } = f);
  game = await f.game();
});
afterAll(() => f.stop());

const settingsOf = (a: AlipayApp, extra: Record<string, unknown> = {}) => f.settings(a, extra);
const alipayGame = (a?: AlipayApp) => f.game(a);

/** An order paid: delivered too once the game has acknowledged its ship_order. */
const PAID = ['paid', 'delivered'];
const payAlipay = (token: string, mode?: string) => client(t, '/v1/client/pay', { order_token: token, channel: 'alipay', ...(mode ? { mode } : {}) });
const callbackUrl = (gameId: string) => `${t.url}/v1/callbacks/alipay/${gameId}`;

/** An order, the action /v1/client/pay answered, and the trade the buyer paid with it. */
async function paidTrade(g: TestGame = game, mode = 'page'): Promise<{ order: CreatedOrder; trade: Trade }> {
  const order = await createOrder(t, g, { notify_url: `${receiver.url}/n/${g.gameId}` });
  const r = await payAlipay(order.order_token, mode);
  expect(r.status, r.text).toBe(200);
  const trade = alipay.buy(r.body.action.url ?? r.body.action.order_string);
  return { order, trade };
}

/** The notify of `trade`, posted to the service (the notify_url the pay request named is a public address). */
const notify = (trade: Trade, fields: Record<string, string> = {}, gameId = game.gameId) => alipay.notify(trade, fields, callbackUrl(gameId));

describe('PUT /admin/v1/games/:game_id/channels/alipay', () => {
  it('keeps app_private_key write-only ("***") and shows the callback URL to register as the notify address', async () => {
    const r = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/channels/alipay`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ enabled: true, app_id: app.appId, app_private_key: '***', alipay_public_key: alipay.publicKeyPem, callback_url: `http://127.0.0.1:1/v1/callbacks/alipay/${game.gameId}` });
    expect(r.text).not.toContain('PRIVATE KEY');
  });

  it('400 naming the field for a key that is not RSA of 2048 bits or more, or not a PEM key; a PKCS#1 private key is taken', async () => {
    const g = await createGame(t);
    const put = (body: Record<string, unknown>) => admin(t, 'PUT', `/admin/v1/games/${g.gameId}/channels/alipay`, body);
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const cases: Array<[Record<string, unknown>, string]> = [
      [settingsOf(app, { app_private_key: small.privateKey.export({ type: 'pkcs8', format: 'pem' }) }), 'app_private_key'],
      [settingsOf(app, { app_private_key: ec.privateKey.export({ type: 'pkcs8', format: 'pem' }) }), 'app_private_key'],
      [settingsOf(app, { app_private_key: `-----BEGIN PRIVATE KEY-----\n${'A'.repeat(80)}\n-----END PRIVATE KEY-----\n` }), 'app_private_key'],
      [settingsOf(app, { alipay_public_key: small.publicKey.export({ type: 'spki', format: 'pem' }) }), 'alipay_public_key'],
      [settingsOf(app, { alipay_public_key: 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA'.padEnd(100, 'A') }), 'alipay_public_key'],
      [settingsOf(app, { app_id: 'not-digits' }), 'app_id'],
    ];
    for (const [body, field] of cases) {
      const r = await put(body);
      expect([r.status, r.body.error], field).toEqual([400, 'invalid_request']);
      expect(r.body.message, field).toContain(field);
    }
    const pkcs1 = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' });
    expect((await put(settingsOf(app, { app_private_key: pkcs1 }))).status).toBe(200);
  });
});

describe('POST /v1/client/pay {channel: "alipay"}', () => {
  it('page (the default): a redirect to the gateway, alipay.trade.page.pay signed with the app key over the order\'s biz_content', async () => {
    const o = await createOrder(t, game);
    const r = await payAlipay(o.order_token);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ order_id: o.order_id, status: 'created', action: { type: 'redirect' } });
    const url: string = r.body.action.url;
    expect(url.startsWith(`${alipay.url}?`)).toBe(true);
    const p = paramsOf(url);
    expect(signedByApp(p, app)).toBe(true);
    expect(p).toMatchObject({ method: 'alipay.trade.page.pay', app_id: app.appId, sign_type: 'RSA2', charset: 'utf-8', notify_url: `http://127.0.0.1:1/v1/callbacks/alipay/${game.gameId}` });
    const beijing = new Date(o.expires_at * 1000 + 8 * 3600_000).toISOString().slice(0, 19).replace('T', ' ');
    expect(JSON.parse(p.biz_content!)).toEqual({ out_trade_no: o.order_id, total_amount: '6.00', subject: 'gem_60', product_code: 'FAST_INSTANT_TRADE_PAY', time_expire: beijing });
    // Tampered: the signature covers biz_content.
    expect(signedByApp({ ...p, biz_content: p.biz_content!.replace('6.00', '0.01') }, app)).toBe(false);
    expect(alipay.violations).toEqual([]);
  });

  it('wap: a redirect for alipay.trade.wap.pay (QUICK_WAP_WAY); app: the order string of alipay.trade.app.pay (QUICK_MSECURITY_PAY)', async () => {
    const o = await createOrder(t, game, { quantity: 3 });
    const wap = await payAlipay(o.order_token, 'wap');
    expect(wap.body.action.type).toBe('redirect');
    const w = paramsOf(wap.body.action.url);
    expect(signedByApp(w, app)).toBe(true);
    expect(w.method).toBe('alipay.trade.wap.pay');
    expect(JSON.parse(w.biz_content!)).toMatchObject({ out_trade_no: o.order_id, total_amount: '18.00', product_code: 'QUICK_WAP_WAY' });

    const appPay = await payAlipay(o.order_token, 'app');
    expect(Object.keys(appPay.body.action).sort()).toEqual(['order_string', 'type']);
    expect(appPay.body.action.type).toBe('alipay_app');
    const a = paramsOf(appPay.body.action.order_string);
    expect(signedByApp(a, app)).toBe(true);
    expect(a.method).toBe('alipay.trade.app.pay');
    expect(JSON.parse(a.biz_content!)).toMatchObject({ out_trade_no: o.order_id, total_amount: '18.00', product_code: 'QUICK_MSECURITY_PAY' });
  });

  it('asked again while the trade is open: the same action for the same mode (one trade at Alipay), another for another mode', async () => {
    const o = await createOrder(t, game);
    const first = await payAlipay(o.order_token);
    expect((await payAlipay(o.order_token, 'page')).body.action).toEqual(first.body.action);
    const wap = await payAlipay(o.order_token, 'wap');
    expect(wap.body.action.url).not.toBe(first.body.action.url);
    expect((await payAlipay(o.order_token, 'wap')).body.action).toEqual(wap.body.action);
  });

  it('amounts in yuan with two decimals: 1 fen is 0.01, 100000 fen is 1000.00', async () => {
    for (const [price, yuan] of [[1, '0.01'], [10, '0.10'], [100_000, '1000.00']] as const) {
      await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/p${price}`, { name: 'x', price, currency: 'CNY' });
      const o = await createOrder(t, game, { product_id: `p${price}` });
      const r = await payAlipay(o.order_token);
      expect(JSON.parse(paramsOf(r.body.action.url).biz_content!).total_amount).toBe(yuan);
    }
  });

  it('refuses: another currency (403 saying CNY only), a mode of another channel (400), a game without the channel (403)', async () => {
    await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/usd`, { name: 'x', price: 99, currency: 'USD' });
    const usd = await createOrder(t, game, { product_id: 'usd' });
    const r = await payAlipay(usd.order_token);
    expect([r.status, r.body.error]).toEqual([403, 'channel_unavailable']);
    expect(r.body.message).toContain('CNY');

    const o = await createOrder(t, game);
    const native = await payAlipay(o.order_token, 'native');
    expect([native.status, native.body.error]).toEqual([400, 'invalid_request']);
    expect(native.body.message).toContain('page');
    expect((await payAlipay(o.order_token, 'qr')).status).toBe(400);

    const other = await createGame(t);
    const none = await payAlipay((await createOrder(t, other)).order_token);
    expect([none.status, none.body.error]).toEqual([403, 'channel_unavailable']);
  });
});

describe('POST /v1/callbacks/alipay/:game_id', () => {
  it('TRADE_SUCCESS pays the order (the trade number recorded, amount in fen), answers text/plain `success`, and the game gets ship_order', async () => {
    const { order, trade } = await paidTrade();
    const r = await notify(trade);
    expect([r.status, r.text]).toEqual([200, 'success']);
    expect(r.contentType).toMatch(/^text\/plain/);
    expect(await orderRow(t, order.order_id)).toMatchObject({ is_sandbox: 0 });
    expect(PAID).toContain(await statusOf(t, order.order_id));
    expect(await paymentsOf(t, order.order_id)).toEqual([expect.objectContaining({ provider: 'alipay', provider_txn_id: trade.trade_no, amount: 600, currency: 'CNY', status: 'accepted' })]);
    const got = await until('the ship_order at the game', () => receiver.received.find((x) => x.body?.data?.order_id === order.order_id));
    expect(got.body).toMatchObject({ notification_type: 'ship_order', data: { is_sandbox: false, amount: 600, currency: 'CNY' } });
    expect(got.signatureProblem).toBeNull();
  });

  it('the same notify ten times (and at once) pays once, answers success each time', async () => {
    const { order, trade } = await paidTrade(game, 'app');
    const fields = alipay.sign(alipay.notifyFields(trade));
    const answers = await Promise.all(Array.from({ length: 10 }, () => postForm(callbackUrl(game.gameId), fields)));
    expect(answers.map((a) => a.text)).toEqual(Array(10).fill('success'));
    expect(await paymentsOf(t, order.order_id)).toHaveLength(1);
    expect((await notificationsOf(t, order.order_id)).filter((n) => n.type === 'ship_order')).toHaveLength(1);
  });

  it('TRADE_FINISHED pays too; WAIT_BUYER_PAY and TRADE_CLOSED of an unpaid trade change nothing (success)', async () => {
    const a = await paidTrade(game, 'wap');
    expect((await notify({ ...a.trade, trade_status: 'WAIT_BUYER_PAY' })).text).toBe('success');
    expect((await notify({ ...a.trade, trade_status: 'TRADE_CLOSED' })).text).toBe('success');
    expect(await statusOf(t, a.order.order_id)).toBe('created');
    expect((await notify({ ...a.trade, trade_status: 'TRADE_FINISHED' })).text).toBe('success');
    expect(PAID).toContain(await statusOf(t, a.order.order_id));
    // A payment notify that says refund_fee 0.00 is a payment, not a refund.
    const b = await paidTrade();
    expect((await notify(b.trade, { refund_fee: '0.00' })).text).toBe('success');
    expect(PAID).toContain(await statusOf(t, b.order.order_id));
  });

  it('an amount other than the order\'s is kept flagged, not paid (answered success: handled)', async () => {
    const { order, trade } = await paidTrade();
    const r = await notify({ ...trade, total_amount: '0.01' });
    expect(r.text).toBe('success');
    expect(await statusOf(t, order.order_id)).toBe('created');
    const [p] = await paymentsOf(t, order.order_id);
    expect(p).toMatchObject({ status: 'flagged', reason: 'amount_mismatch', amount: 1, provider_txn_id: trade.trade_no });
  });

  it('refuses (`fail`, nothing paid): a bad signature, a notify signed by another key, another app_id, no signature, a form that is not one', async () => {
    const { order, trade } = await paidTrade();
    const fields = alipay.sign(alipay.notifyFields(trade));
    const url = callbackUrl(game.gameId);
    const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    const other = makeAlipayApp();
    const cases: Array<[string, Record<string, string>, number]> = [
      ['tampered amount', { ...fields, total_amount: '6.01' }, 422],
      ['tampered status', { ...fields, trade_status: 'TRADE_FINISHED' }, 422],
      ['garbage sign', { ...fields, sign: 'AAAA' }, 422],
      ['another key', alipay.sign(alipay.notifyFields(trade), stranger), 422],
      ['another app_id', alipay.sign(alipay.notifyFields(trade, { app_id: other.appId })), 422],
      ['RSA (SHA1) sign_type', { ...fields, sign_type: 'RSA' }, 422],
      ['no sign', Object.fromEntries(Object.entries(fields).filter(([k]) => k !== 'sign')), 400],
    ];
    for (const [what, body, status] of cases) {
      const r = await postForm(url, body);
      expect([r.status, r.text], what).toEqual([status, 'fail']);
    }
    const repeated = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `${new URLSearchParams(fields).toString()}&trade_status=TRADE_SUCCESS` });
    expect([repeated.status, await repeated.text()]).toEqual([400, 'fail']);
    expect(await paymentsOf(t, order.order_id)).toEqual([]);
    expect(await statusOf(t, order.order_id)).toBe('created');
  });

  it('400 `fail` for a signed notify without out_trade_no, trade_no or trade_status, or with an amount that is not yuan (6.001, -1, 6., "", 1e3); 0.01 and 999999999999.99 are amounts', async () => {
    const { order, trade } = await paidTrade();
    for (const missing of ['out_trade_no', 'trade_no', 'trade_status']) {
      const fields = alipay.notifyFields(trade);
      delete fields[missing];
      const r = await postForm(callbackUrl(game.gameId), alipay.sign(fields));
      expect([r.status, r.text], missing).toEqual([400, 'fail']);
    }
    for (const amount of ['6.001', '-1', '6.', '', '1e3', ' 6.00']) {
      expect((await notify({ ...trade, total_amount: amount })).status, amount).toBe(400);
      expect((await notify(trade, { refund_fee: amount })).status, `refund_fee ${amount}`).toBe(400);
    }
    expect(await paymentsOf(t, order.order_id)).toEqual([]);
    for (const amount of ['0.01', '999999999999.99']) expect((await notify({ ...trade, total_amount: amount })).text, amount).toBe('success');
    expect((await paymentsOf(t, order.order_id)).map((p) => [p.amount, p.status])).toEqual([[1, 'flagged']]);
  });

  it('404 `fail` for a game without an alipay channel; a JSON body is refused (`fail`); a body over 64 KiB is 413', async () => {
    const { trade } = await paidTrade();
    const other = await createGame(t);
    const r = await notify(trade, {}, other.gameId);
    expect([r.status, r.text]).toEqual([404, 'fail']);
    const json = await fetch(callbackUrl(game.gameId), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"sign":"x"}' });
    expect([json.status, await json.text()]).toEqual([400, 'fail']);
    const big = await postForm(callbackUrl(game.gameId), { ...alipay.sign(alipay.notifyFields(trade)), body: 'x'.repeat(64 * 1024) });
    expect(big.status).toBe(413);
  });

  it('a value with % and + is verified as posted (decoded once)', async () => {
    const { order, trade } = await paidTrade();
    const r = await notify(trade, { subject: '60% off + 100 gems', body: 'a&b=c' });
    expect(r.text).toBe('success');
    expect(PAID).toContain(await statusOf(t, order.order_id));
  });

  it('an order of another game, notified through this game\'s channel, is refused', async () => {
    const g2 = await alipayGame();
    const { order, trade } = await paidTrade(g2);
    const r = await notify(trade, {}, game.gameId);
    expect([r.status, r.text]).toEqual([422, 'fail']);
    expect(await statusOf(t, order.order_id)).toBe('created');
  });

  it('a full refund made in the merchant portal (TRADE_CLOSED, refund_fee = total_amount) refunds the order; again: nothing more; a partial one refunds nothing', async () => {
    const { order, trade } = await paidTrade();
    expect((await notify(trade)).text).toBe('success');
    expect((await notify({ ...trade, trade_status: 'TRADE_SUCCESS', refund_fee: '1.00' })).text).toBe('success');
    expect(PAID).toContain(await statusOf(t, order.order_id));
    const closed = { ...trade, trade_status: 'TRADE_CLOSED' as const, refund_fee: '6.00' };
    expect((await notify(closed)).text).toBe('success');
    expect(await statusOf(t, order.order_id)).toBe('refunded');
    expect((await notify(closed)).text).toBe('success');
    const got = await until('the refund at the game', () => {
      const mine = receiver.received.filter((x) => x.body?.data?.order_id === order.order_id);
      return mine.some((x) => x.body.notification_type === 'refund') ? mine : undefined;
    });
    expect(got.map((x) => x.body.notification_type)).toEqual(['ship_order', 'refund']);
    expect((await notificationsOf(t, order.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });
});
