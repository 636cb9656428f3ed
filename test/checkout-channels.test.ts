import { mkdirSync } from 'node:fs';
import jsQRModule from 'jsqr';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paramsOf, signedByApp } from './helpers/alipay.js';
import { haveChromium, launchChromium } from './helpers/browser.js';
import { CheckoutFixture } from './helpers/checkout.js';
import { paymentsOf, statusOf } from './helpers/orders.js';
import { admin } from './helpers/service.js';

/**
 * The hosted checkout page with real channels (payments.md 3) in headless Chromium: WeChat Pay
 * Native as a QR code the service draws (decoded here from a screenshot), paid by the WeChat
 * Pay stand-in's callback while the page is open; Alipay as a redirect to the Alipay stand-in's
 * gateway with a request signed by the app key; the sandbox marked as a test; a phone's width.
 */
const OUT = 'test-output';
// jsqr is CommonJS typed as an ES module's default export: under NodeNext the import is its namespace.
const jsQR = jsQRModule as unknown as typeof jsQRModule.default;
const PHONE = { width: 390, height: 844 };
const f = new CheckoutFixture();
let browser: Browser;

// Four RSA key pairs, a service and Chromium: a busy machine needs more than the default minute.
beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  await f.start();
  if (haveChromium('checkout channels browser test')) browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await f.stop();
});

/** A page that records script errors, console errors and requests to any host but the service. */
async function openPage(token: string, viewport = { width: 1280, height: 900 }): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport });
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
  page.on('request', (r) => !r.url().startsWith(f.t.url) && !r.url().startsWith(new URL(f.alipay.url).origin) && problems.push(`external request: ${r.url()}`));
  const res = await page.goto(`${f.t.url}/checkout/${token}`);
  expect(res?.status()).toBe(200);
  return { page, problems };
}

/** The text of the QR code on the page, read from a screenshot of it. */
async function decodeQr(page: Page): Promise<string | undefined> {
  const png = PNG.sync.read(await page.locator('#qr').screenshot());
  return jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data;
}

const noHorizontalScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth);

describe.skipIf(!haveChromium('checkout channels browser test'))('hosted checkout: the channels the game enabled', () => {
  it('WeChat Pay: a scannable QR code of the code_url the stand-in issued; its paid callback turns the open page to Paid', async () => {
    const o = await f.order();
    const { page, problems } = await openPage(o.order_token);
    expect(await page.textContent('#pay-wechat')).toBe('WeChat Pay');
    expect(await page.textContent('#pay-alipay')).toBe('Alipay');
    expect(await page.textContent('#pay')).toBe('Test payment: CNY 6.00');
    expect(await page.isHidden('#qr-box')).toBe(true);

    await page.click('#pay-wechat');
    await page.waitForSelector('#qr');
    const txn = f.wx.transactions.get(o.order_id)!;
    expect(txn.trade_type).toBe('NATIVE');
    expect(await decodeQr(page)).toBe(txn.answer.code_url);
    expect(await page.textContent('#status')).toContain('Scan');
    await page.screenshot({ path: `${OUT}/checkout-wechat-qr.png` });
    // One payment at WeChat Pay: the QR image answered the open payment's action again.
    expect(f.wx.requests.filter((r) => r.url === '/v3/pay/transactions/native')).toHaveLength(1);

    expect((await f.wx.paymentCallback(f.wx.pay(o.order_id))).status).toBe(204);
    await page.waitForSelector('#status.paid', { timeout: 15_000 });
    expect(['paid', 'delivered']).toContain(await page.getAttribute('#status', 'data-status'));
    expect(await page.textContent('#status')).toBe('Paid');
    expect(await page.$('#qr-box')).toBeNull();
    expect(await page.$('button.pay')).toBeNull();
    expect(await paymentsOf(f.t, o.order_id)).toHaveLength(1);
    await page.screenshot({ path: `${OUT}/checkout-wechat-paid.png` });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('Alipay: page pay on a wide screen, WAP pay on a phone, each a redirect to the gateway signed with the app key', async () => {
    for (const [viewport, method] of [[{ width: 1280, height: 900 }, 'alipay.trade.page.pay'], [PHONE, 'alipay.trade.wap.pay']] as const) {
      const o = await f.order();
      const { page, problems } = await openPage(o.order_token, viewport);
      const [request] = await Promise.all([page.waitForRequest((r) => r.url().startsWith(f.alipay.url)), page.click('#pay-alipay')]);
      const params = paramsOf(request.url());
      expect(params.method, method).toBe(method);
      expect(params.app_id).toBe(f.alipayApp.appId);
      expect(signedByApp(params, f.alipayApp), method).toBe(true);
      expect(JSON.parse(params.biz_content!)).toMatchObject({ out_trade_no: o.order_id, total_amount: '6.00' });
      // The stand-in's buyer takes the request as Alipay would (signature, timestamp, version).
      expect(f.alipay.buy(request.url()).out_trade_no).toBe(o.order_id);
      expect(f.alipay.violations).toEqual([]);
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  it('at 390 px wide: every channel and the QR code fit, no horizontal scroll', async () => {
    const o = await f.order();
    const { page, problems } = await openPage(o.order_token, PHONE);
    expect(await noHorizontalScroll(page)).toBeLessThanOrEqual(PHONE.width);
    await page.click('#pay-wechat');
    await page.waitForSelector('#qr');
    expect(await noHorizontalScroll(page)).toBeLessThanOrEqual(PHONE.width);
    for (const sel of ['#qr', '#pay-wechat', '#pay-alipay', '#pay', '#amount']) {
      const box = await page.locator(sel).boundingBox();
      expect(box && box.x >= 0 && box.x + box.width <= PHONE.width, sel).toBe(true);
    }
    expect(await decodeQr(page)).toBe(f.wx.transactions.get(o.order_id)!.answer.code_url);
    await page.screenshot({ path: `${OUT}/checkout-phone.png`, fullPage: true });
    expect(problems).toEqual([]);
    await page.close();
  });

  it('the sandbox is marked as a test payment; a game with only the sandbox shows the TEST PAYMENT badge and no real channel', async () => {
    const g = await f.gameWith([]);
    const { page } = await openPage((await f.order(g)).order_token);
    expect(await page.textContent('#test-badge')).toBe('TEST PAYMENT');
    expect(await page.textContent('#pay')).toBe('Test payment: CNY 6.00');
    expect(await page.textContent('#note')).toContain('no money moves');
    expect(await page.$('#pay-wechat')).toBeNull();
    expect(await page.$('#pay-alipay')).toBeNull();
    await page.close();
    // With real channels beside it, the sandbox button keeps its test label; no badge.
    const { page: mixed } = await openPage((await f.order()).order_token);
    expect(await mixed.$('#test-badge')).toBeNull();
    expect(await mixed.textContent('#note')).toContain('Test payment (sandbox)');
    await mixed.close();
  });

  it('offers only the channels the game enabled, and WeChat Pay and Alipay for CNY orders only', async () => {
    const wechatOnly = await f.gameWith(['wechat'], false);
    const { page } = await openPage((await f.order(wechatOnly)).order_token);
    expect(await page.$$eval('button.pay', (bs) => bs.map((b) => b.getAttribute('data-channel')))).toEqual(['wechat']);
    await page.close();
    expect((await admin(f.t, 'PUT', `/admin/v1/games/${f.game.gameId}/products/gem_usd`, { name: 'USD gems', price: 99, currency: 'USD' })).status).toBe(200);
    const { page: usd } = await openPage((await f.order(f.game, { product_id: 'gem_usd' })).order_token);
    expect(await usd.$$eval('button.pay', (bs) => bs.map((b) => b.getAttribute('data-channel')))).toEqual(['sandbox']);
    await usd.close();
  });

  it('a channel turned off while the page is open: its button answers the 403 and goes, the others stay', async () => {
    const g = await f.gameWith(['wechat', 'alipay']);
    const { page } = await openPage((await f.order(g)).order_token);
    expect((await admin(f.t, 'DELETE', `/admin/v1/games/${g.gameId}/channels/wechat`)).status).toBe(200);
    await page.click('#pay-wechat');
    await page.waitForSelector('#status.error');
    expect(await page.$('#pay-wechat')).toBeNull();
    expect(await page.$('#pay-alipay')).not.toBeNull();
    await page.close();
  });
});

describe('GET /checkout/:order_token/wechat-qr.svg', () => {
  const qr = (token: string) => fetch(`${f.t.url}/checkout/${encodeURIComponent(token)}/wechat-qr.svg`);

  it('an SVG drawn here, private and inert, of the same open payment each time', async () => {
    const o = await f.order();
    const a = await qr(o.order_token);
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toBe('image/svg+xml');
    expect(a.headers.get('cache-control')).toBe('no-store');
    expect(a.headers.get('referrer-policy')).toBe('no-referrer');
    expect(a.headers.get('content-security-policy')).toBe("default-src 'none'");
    const svg = await a.text();
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    expect(svg).not.toMatch(/<script|href=/i);
    expect(await (await qr(o.order_token)).text()).toBe(svg);
    expect(f.wx.requests.filter((r) => r.body?.out_trade_no === o.order_id)).toHaveLength(1);
  });

  it('401 for an unknown or tampered token, 403 without the wechat channel, 409 for a canceled order', async () => {
    const o = await f.order();
    for (const token of ['nope', `${o.order_token.slice(0, -1)}${o.order_token.endsWith('A') ? 'B' : 'A'}`, 'ot_1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      const r = await qr(token);
      expect([r.status, (await r.json()).error], token).toEqual([401, 'invalid_token']);
    }
    const noWechat = await f.gameWith(['alipay']);
    const r403 = await qr((await f.order(noWechat)).order_token);
    expect([r403.status, (await r403.json()).error]).toEqual([403, 'channel_unavailable']);
    const canceled = await f.order();
    expect((await admin(f.t, 'POST', `/admin/v1/orders/${canceled.order_id}/cancel`, {})).status).toBe(200);
    const r409 = await qr(canceled.order_token);
    expect([r409.status, (await r409.json()).error]).toEqual([409, 'invalid_state']);
  });

  it('409 for a paid order (nothing to scan) and for an expired one, whose page offers no channel', async () => {
    const paid = await f.order();
    expect((await fetch(`${f.t.url}/v1/client/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order_token: paid.order_token, channel: 'sandbox' }) })).status).toBe(200);
    const r = await qr(paid.order_token);
    expect([r.status, (await r.json()).error]).toEqual([409, 'invalid_state']);
    // Last: the service's clock moves past the order's lifetime.
    const old = await f.order();
    f.clock.advance(31 * 60_000);
    const expired = await qr(old.order_token);
    expect([expired.status, (await expired.json()).error]).toEqual([409, 'invalid_state']);
    // Its page offers no channel any more.
    const html = await (await fetch(`${f.t.url}/checkout/${old.order_token}`)).text();
    expect(html).toContain('data-status="expired"');
    expect(html).not.toMatch(/<button|id="qr-box"/);
    expect(await statusOf(f.t, old.order_id)).not.toBe('paid');
  });
});
