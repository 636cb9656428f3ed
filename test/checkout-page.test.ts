import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { createOrder, notificationsOf, orderRow, paymentsOf } from './helpers/orders.js';
import { Receiver, until } from './helpers/receiver.js';
import { haveChromium, launchChromium } from './helpers/browser.js';

const OUT = 'test-output';

describe.skipIf(!haveChromium('checkout browser test'))('hosted checkout page in headless Chromium', () => {
  let t: TestService;
  let game: TestGame;
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    t = await startService();
    game = await createGame(t);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  it('shows the order, pays it with sandbox, shows it paid, and the game receives the signed ship_order', async () => {
    const receiver = await new Receiver({ keys: new Map([[game.gameId, [game.secret]]]), now: () => Date.now() }).start();
    const o = await createOrder(t, game, { quantity: 2, notify_url: `${receiver.url}/notify` });
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('request', (r) => !r.url().startsWith(t.url) && problems.push(`external request: ${r.url()}`));

    const res = await page.goto(`${t.url}/checkout/${o.order_token}`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-type']).toMatch(/^text\/html/);
    expect(await page.textContent('#product')).toBe('60 gems');
    expect(await page.textContent('#quantity')).toBe('2');
    expect(await page.textContent('#amount')).toBe('CNY 12.00');
    expect(await page.getAttribute('#status', 'data-status')).toBe('created');
    // payments.md 3: the sandbox is offered as a test payment.
    expect(await page.textContent('#pay')).toBe('Test payment: CNY 12.00');
    expect(await page.textContent('#note')).toContain('no money moves');
    await page.screenshot({ path: `${OUT}/checkout-before-pay.png` });

    await page.click('#pay');
    await page.waitForSelector('#status[data-status="paid"]', { timeout: 10_000 });
    expect(await page.textContent('#status')).toBe('Paid');
    expect(await page.$('#pay')).toBeNull();
    await page.screenshot({ path: `${OUT}/checkout-paid.png` });

    // The notification arrives at the game, signed, and the order becomes delivered.
    const got = await until('the ship_order reaches the game', () => receiver.on('/notify')[0]);
    expect(got.signatureProblem).toBeNull();
    expect(got.body).toMatchObject({ notification_type: 'ship_order', data: { order_id: o.order_id, quantity: 2, amount: 1200, is_sandbox: true } });
    await until('the order is delivered', async () => ((await orderRow(t, o.order_id)).status === 'delivered' ? true : null));
    expect(await orderRow(t, o.order_id)).toMatchObject({ status: 'delivered', is_sandbox: 1 });
    const ntfs = await notificationsOf(t, o.order_id);
    expect(ntfs.map((n) => n.type)).toEqual(['ship_order']);
    expect(JSON.parse(ntfs[0]!.body).data.is_sandbox).toBe(true);
    expect(await paymentsOf(t, o.order_id)).toHaveLength(1);
    await receiver.close();

    // Reloading shows the order settled (delivered by now) without a pay button.
    await page.reload();
    expect(['paid', 'delivered']).toContain(await page.getAttribute('#status', 'data-status'));
    expect(await page.$('#pay')).toBeNull();
    expect(problems).toEqual([]);
    await page.close();
  });

  it('escapes what it shows: a product name with markup is text, not HTML', async () => {
    const name = `<img src=x onerror="window.__xss=1">Gems & "more" 'quoted'`;
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/evil`, { name, price: 1234, currency: 'JPY' })).status).toBe(200);
    const o = await createOrder(t, game, { product_id: 'evil' });
    const page = await browser.newPage();
    await page.goto(`${t.url}/checkout/${o.order_token}`);
    expect(await page.textContent('#product')).toBe(name);
    expect(await page.$('#product img')).toBeNull();
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.textContent('#amount')).toBe('JPY 1,234');
    await page.close();
  });

  it('a product name of 128 characters without a space wraps on a phone: the amount stays in view', async () => {
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/long`, { name: 'x'.repeat(128), price: 600, currency: 'CNY' })).status).toBe(200);
    const o = await createOrder(t, game, { product_id: 'long' });
    const page = await browser.newPage({ viewport: { width: 375, height: 700 } });
    await page.goto(`${t.url}/checkout/${o.order_token}`);
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
    const amount = await page.locator('#amount').boundingBox();
    expect(amount && amount.x + amount.width).toBeLessThanOrEqual(375);
    await page.close();
  });

  it('shows amounts in the decimals of the currency\'s ISO 4217 minor unit, not Intl\'s display habit', async () => {
    for (const [currency, price, text] of [['HUF', 123456, 'HUF 1,234.56'], ['IQD', 1000, 'IQD 1.000'], ['KWD', 1234, 'KWD 1.234'], ['CLP', 990, 'CLP 990']] as const) {
      const id = `p-${currency.toLowerCase()}`;
      expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/${id}`, { name: currency, price, currency })).status).toBe(200);
      const o = await createOrder(t, game, { product_id: id });
      const res = await fetch(`${t.url}/checkout/${o.order_token}`);
      expect(res.status).toBe(200);
      expect(await res.text(), currency).toContain(`>${text}<`);
    }
  });

  it('an order canceled while its page is open: Pay answers the 409 and the button goes (trying again cannot help)', async () => {
    const o = await createOrder(t, game);
    const page = await browser.newPage();
    await page.goto(`${t.url}/checkout/${o.order_token}`);
    expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/cancel`, {})).status).toBe(200);
    await page.click('#pay');
    await page.waitForSelector('#status.error');
    expect(await page.textContent('#status')).toContain('canceled');
    expect(await page.$('#pay')).toBeNull();
    await page.close();
  });

  it('offers no pay button when the game does not allow sandbox payments', async () => {
    const g = await createGame(t, { sandbox_payments: false });
    const o = await createOrder(t, g);
    const page = await browser.newPage();
    await page.goto(`${t.url}/checkout/${o.order_token}`);
    expect(await page.$('#pay')).toBeNull();
    expect(await page.textContent('main')).toContain('No payment channel is available');
    await page.close();
  });

  it('answers an HTML error page with status 401 for an unknown or tampered token', async () => {
    const o = await createOrder(t, game);
    const page = await browser.newPage();
    for (const token of ['nope', `${o.order_token.slice(0, -1)}${o.order_token.endsWith('A') ? 'B' : 'A'}`, 'ot_1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
      const res = await page.goto(`${t.url}/checkout/${token}`);
      expect(res?.status()).toBe(401);
      expect(res?.headers()['content-type']).toMatch(/^text\/html/);
      expect(await page.textContent('#error')).toContain('not valid');
    }
    await page.screenshot({ path: `${OUT}/checkout-invalid-token.png` });
    await page.close();
  });

  it('sends headers that keep the token private and the page self-contained', async () => {
    const o = await createOrder(t, game);
    const r = await fetch(`${t.url}/checkout/${o.order_token}`);
    expect(r.headers.get('referrer-policy')).toBe('no-referrer');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(r.headers.get('x-trace-id')).toBeTruthy();
    const html = await r.text();
    expect(html).not.toMatch(/<(script|link|img)[^>]+(src|href)=/i);
  });
});
