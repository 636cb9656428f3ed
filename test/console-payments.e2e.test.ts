import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beijingDate } from '../src/lib/beijing-time.js';
import { makeAlipayApp } from './helpers/alipay.js';
import { haveChromium, openSignedInConsole, type ConsoleBrowser } from './helpers/console-browser.js';
import { Receiver, until } from './helpers/receiver.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { useWechat, wechatPaidOrder } from './helpers/wechat-orders.js';
import { WechatPayStandIn } from './helpers/wechatpay.js';

/**
 * The console's real-money parts (issue 43 point 7) in headless Chromium against a real service
 * and the WeChat Pay stand-in (test/helpers/wechatpay.ts): channels set up with write-only
 * secrets, a payment's provider trade number, refunds settling, reconciliation results.
 */
const PUBLIC = 'https://pay.example.com';
const DAY = 86_400_000;

describe.skipIf(!haveChromium)('console: WeChat Pay and Alipay (headless Chromium)', () => {
  const wx = new WechatPayStandIn();
  const keys = new Map<string, string[]>();
  let t: TestService;
  let receiver: Receiver;
  let browser: ConsoleBrowser;
  let page: Page;
  /** The game whose wechat channel the first test sets up through the console. */
  let game: TestGame;

  const go = (p: string) => page.goto(`${t.url}/console${p}`);
  const status = async (orderId: string) => (await admin(t, 'GET', `/admin/v1/orders/${orderId}`)).body.status as string;
  const heading = (s: string) => page.getByRole('heading', { name: new RegExp(`^Order .* ${s}$`) });
  const paidOrder = (g: TestGame) => wechatPaidOrder(t, wx, g, `${receiver.url}/n/${g.gameId}`);

  beforeAll(async () => {
    await wx.start();
    receiver = await new Receiver({ keys, now: () => Date.now() }).start();
    t = await startService({ env: { WECHATPAY_BASE_URL: wx.url, PUBLIC_BASE_URL: PUBLIC, NOTIFY_POLL_INTERVAL_MS: '50' } });
    wx.deliverTo = (u) => t.url + new URL(u).pathname;
    browser = await openSignedInConsole(t.url);
    page = browser.page;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await receiver?.close();
    await wx.close();
  });

  async function selectChannel(channel: string) {
    await page.locator('select[name="channel"]').selectOption(channel);
  }

  it('sets up wechat and alipay: a field per setting, keys write-only (set / not set), the callback URL to register', async () => {
    game = await createGame(t, { sandbox_payments: false });
    keys.set(game.gameId, [game.secret]);
    const s = wx.settings() as Record<string, string>;
    await go(`/games/${game.gameId}`);
    await selectChannel('wechat');
    await page.getByTestId('provider-callback').getByText('shown once the channel is saved').waitFor();
    expect(await page.getByTestId('secret-merchant_private_key').textContent()).toBe('not set');
    for (const f of ['mchid', 'appid', 'merchant_serial_no', 'api_v3_key', 'wechatpay_public_key_id', 'wechatpay_public_key']) await page.locator(`[name="${f}"]`).fill(s[f]!);
    // A PEM key can be loaded from its file (apiclient_key.pem).
    await page.getByLabel('Merchant API private key from a file').setInputFiles({ name: 'apiclient_key.pem', mimeType: 'text/plain', buffer: Buffer.from(s.merchant_private_key!) });
    await expect.poll(() => page.locator('[name="merchant_private_key"]').inputValue()).toBe(s.merchant_private_key);
    expect(await page.locator('[name="api_v3_key"]').getAttribute('type')).toBe('password');
    await page.getByRole('button', { name: 'Save channel' }).click();

    const callback = `${PUBLIC}/v1/callbacks/wechat/${game.gameId}`;
    const row = page.getByTestId('channels-table').locator('tbody tr', { hasText: /^wechat/ });
    await row.getByText(callback).waitFor();
    await page.getByTestId('provider-callback').getByText(callback).waitFor();
    // Stored, read back as set, and never shown: the form forgets them once saved.
    expect(await page.getByTestId('secret-merchant_private_key').textContent()).toBe('set');
    expect(await page.getByTestId('secret-api_v3_key').textContent()).toBe('set');
    expect(await page.locator('[name="api_v3_key"]').inputValue()).toBe('');
    expect(await page.locator('[name="merchant_private_key"]').inputValue()).toBe('');
    expect(await page.locator('[name="mchid"]').inputValue()).toBe(wx.mchid);
    const html = await page.content();
    expect(html).not.toContain(wx.apiV3Key);
    expect(html).not.toContain(s.merchant_private_key!.split('\n')[1]);
    const stored = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/channels/wechat`)).body;
    expect(stored).toMatchObject({ enabled: true, mchid: wx.mchid, appid: wx.appid, merchant_serial_no: wx.merchantSerial, merchant_private_key: '***', api_v3_key: '***', wechatpay_public_key_id: wx.publicKeyId, callback_url: callback });
    await browser.shot('channel-wechat');

    // Alipay: the service checks the keys when the channel is enabled.
    const app = makeAlipayApp();
    await selectChannel('alipay');
    expect(await page.getByTestId('secret-app_private_key').textContent()).toBe('not set');
    await page.locator('[name="app_id"]').fill(app.appId);
    await page.locator('[name="app_private_key"]').fill(app.privateKeyPem);
    await page.locator('[name="alipay_public_key"]').fill('-----BEGIN PUBLIC KEY-----\nnot a key\n-----END PUBLIC KEY-----');
    await page.getByRole('button', { name: 'Save channel' }).click();
    await page.getByRole('alert').filter({ hasText: '400' }).waitFor();
    await page.locator('[name="alipay_public_key"]').fill(app.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    await page.getByRole('button', { name: 'Save channel' }).click();
    await page.getByTestId('channels-table').locator('tbody tr', { hasText: /^alipay/ }).getByText(`${PUBLIC}/v1/callbacks/alipay/${game.gameId}`).waitFor();
    expect(await page.getByTestId('secret-app_private_key').textContent()).toBe('set');
    expect((await admin(t, 'GET', `/admin/v1/games/${game.gameId}/channels/alipay`)).body).toMatchObject({ app_id: app.appId, app_private_key: '***' });
  });

  it("shows a WeChat Pay order's trade number, refunds it and follows it from refund_pending to refunded", async () => {
    // Paid with the keys the console stored: WeChat Pay took the service's signed requests.
    const o = await paidOrder(game);
    await until('delivered', async () => (await status(o.order_id)) === 'delivered');
    await go(`/orders/${o.order_id}`);
    expect(await page.getByTestId('provider-trade').textContent()).toBe(`wechat ${o.transaction_id}`);
    await page.getByRole('cell', { name: o.transaction_id }).waitFor();
    wx.refundBehaviour = { kind: 'processing' };
    await page.getByRole('button', { name: 'Refund' }).click();
    await page.getByRole('group', { name: /Ask WeChat Pay to return the whole amount/ }).waitFor();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await heading('refund_pending').waitFor();
    await page.getByTestId('refund-state').getByText('waiting for WeChat Pay to return the money').waitFor();
    await browser.shot('refund-pending');
    // WeChat Pay returns the money and says so: the open page follows the order.
    const refund = await until('the refund request', () => [...wx.refunds.values()].find((r) => r.out_trade_no === o.order_id));
    refund.status = 'SUCCESS';
    expect((await wx.refundCallback(refund)).status).toBe(204);
    await heading('refunded').waitFor();
    await page.getByTestId('refund-state').getByText(/^Refunded .*: the money is back with the player\.$/).waitFor();
    await page.getByTestId('notification').filter({ hasText: 'refund' }).waitFor();
    expect(await page.getByRole('button', { name: /refund/i }).count()).toBe(0);
  });

  it("a refund WeChat Pay refuses shows refund_failed with its reason; requested again, it is refunded", async () => {
    const o = await paidOrder(game);
    await go(`/orders/${o.order_id}`);
    await page.getByTestId('provider-trade').waitFor();
    wx.refundBehaviour = { kind: 'refuse', status: 403, code: 'NOT_ENOUGH', message: '基本账户余额不足，请充值后重新发起' };
    await page.getByRole('button', { name: 'Refund' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await heading('refund_failed').waitFor();
    expect(await page.getByTestId('refund-failure').textContent()).toContain('基本账户余额不足');
    expect(await page.getByTestId('refund-state').textContent()).toContain('WeChat Pay refused the refund');
    await browser.shot('refund-failed');
    wx.refundBehaviour = { kind: 'success' };
    await page.getByRole('button', { name: 'Request refund again' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await heading('refunded').waitFor();
    expect(await status(o.order_id)).toBe('refunded');
  });

  it('runs a reconciliation and lists the runs with their differences (and a day that matches)', async () => {
    const g = await createGame(t, { sandbox_payments: false });
    keys.set(g.gameId, [g.secret]);
    await useWechat(t, wx, g);
    const o = await paidOrder(g);
    const yesterday = beijingDate(Date.now() - DAY);
    const before = beijingDate(Date.now() - 2 * DAY);
    // Yesterday's trade bill lists today's payment with another amount; the day before, no
    // payment and no bill: it matches.
    wx.bills.set(yesterday, [{ transaction_id: o.transaction_id, out_trade_no: o.order_id, total: 599 }]);
    wx.bills.delete(before);
    await go(`/reconciliations?game_id=${g.gameId}`);
    await page.getByText('No reconciliation runs.').waitFor();
    expect(await page.locator('[name="run_date"]').inputValue()).toBe(yesterday);
    expect(await page.locator('[name="run_game_id"]').inputValue()).toBe(g.gameId);
    await page.getByRole('button', { name: 'Reconcile' }).click();
    await page.getByTestId('reconcile-result').getByText(`wechat ${g.gameId} ${yesterday}: differences, 1 difference(s)`).waitFor();
    const runs = page.getByTestId('reconciliations-table').getByTestId('reconciliation-run');
    await expect.poll(() => runs.count()).toBe(1);
    const diff = runs.first().getByTestId('differences').locator('tbody tr');
    expect(await diff.textContent()).toBe(`amounts differ${o.order_id}${o.transaction_id}5.99 CNY6.00 CNY`);
    // The order is a link to its page.
    expect(await diff.getByRole('link', { name: o.order_id }).getAttribute('href')).toBe(`/console/orders/${o.order_id}`);

    await page.locator('[name="run_date"]').fill(before);
    await page.getByRole('button', { name: 'Reconcile' }).click();
    await page.getByTestId('reconcile-result').getByText(`wechat ${g.gameId} ${before}: matched, 0 difference(s)`).waitFor();
    await expect.poll(() => runs.count()).toBe(2);
    expect(await runs.first().textContent()).toMatch(new RegExp(`${before}matched0 / 0ADMIN_TOKEN.*none$`));
    expect(await runs.nth(1).textContent()).toContain(`${yesterday}differences1 / 0`);
    await browser.shot('reconciliations');
    // The list is the API's, filtered by channel too.
    await go(`/reconciliations?game_id=${g.gameId}&channel=alipay`);
    await page.getByText('No reconciliation runs.').waitFor();
    // A day not yet over is refused with the API's reason.
    await go(`/reconciliations?game_id=${g.gameId}`);
    await page.locator('[name="run_date"]').fill(beijingDate(Date.now()));
    await page.getByRole('button', { name: 'Reconcile' }).click();
    await page.getByRole('alert').getByText(/400 invalid_request: date .* is not a past day/).waitFor();
  });

  it('ran without script errors or CSP refusals', () => {
    expect(browser.problems).toEqual([]);
  });
});
