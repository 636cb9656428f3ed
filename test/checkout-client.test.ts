import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckoutError, createCheckoutClient, type ClientOrder, type PayResult } from '../client/checkout.js';
import { haveChromium, launchChromium } from './helpers/browser.js';
import { CheckoutFixture } from './helpers/checkout.js';
import { admin } from './helpers/service.js';

/**
 * The checkout client library (client/checkout.js) as a web game uses it: a game page on
 * another origin (a local server) imports it from the service's /sdk/v1/checkout.js and pays
 * through the real service, whose WeChat Pay is the stand-in.
 */
const f = new CheckoutFixture();
let browser: Browser;
let gameSite: http.Server;
let gameOrigin = '';

/** The game's page: imports the library from the service, exposes it as window.checkout. */
const gamePage = (serviceUrl: string) => `<!doctype html><html><head><meta charset="utf-8"><title>game</title></head><body>
<script type="module">import * as checkout from '${serviceUrl}/sdk/v1/checkout.js'; window.checkout = checkout;</script></body></html>`;

// Four RSA key pairs, a service and Chromium: a busy machine needs more than the default minute.
beforeAll(async () => {
  await f.start();
  gameSite = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(gamePage(f.t.url)));
  await new Promise<void>((resolve) => gameSite.listen(0, '127.0.0.1', resolve));
  gameOrigin = `http://127.0.0.1:${(gameSite.address() as AddressInfo).port}`;
  if (haveChromium('checkout client browser test')) browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => gameSite?.close(resolve));
  await f.stop();
});

type Lib = typeof import('../client/checkout.js');
declare const window: { checkout: Lib };

/** The game's page with the library loaded from the service. */
async function openGame(): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(gameOrigin);
  await page.waitForFunction(() => (globalThis as unknown as { checkout?: unknown }).checkout !== undefined);
  return page;
}

/** A library call in the page: its result, or the CheckoutError it threw as {name, status, error}. */
function inPage<A, R>(page: Page, fn: (lib: Lib, arg: A) => Promise<R>, arg: A): Promise<R | { name: string; status: number; error: string }> {
  return page.evaluate(
    async ([src, a]) => {
      const run = new Function('lib', 'arg', `return (${src})(lib, arg);`) as (lib: Lib, arg: A) => Promise<R>;
      try {
        return await run(window.checkout, a as A);
      } catch (e) {
        const err = e as { name: string; status: number; error: string };
        return { name: err.name, status: err.status, error: err.error };
      }
    },
    [fn.toString(), arg] as const,
  );
}

describe('GET /sdk/v1/checkout.js and checkout.d.ts', () => {
  it('serve the package\'s exported files (combo-game-platform/checkout-client), loadable from any origin', async () => {
    const require = createRequire(import.meta.url);
    const js = await fetch(`${f.t.url}/sdk/v1/checkout.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(js.headers.get('access-control-allow-origin')).toBe('*');
    expect(await js.text()).toBe(readFileSync(require.resolve('combo-game-platform/checkout-client'), 'utf8'));
    const dts = await fetch(`${f.t.url}/sdk/v1/checkout.d.ts`);
    expect(dts.status).toBe(200);
    expect(await dts.text()).toBe(readFileSync(new URL('../client/checkout.d.ts', import.meta.url), 'utf8'));
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(pkg.exports['./checkout-client']).toEqual({ types: './client/checkout.d.ts', default: './client/checkout.js' });
  });

  it('the client API answers other origins: preflight 204, and refusals carry Access-Control-Allow-Origin too', async () => {
    const pre = await fetch(`${f.t.url}/v1/client/pay`, { method: 'OPTIONS', headers: { origin: gameOrigin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe('*');
    expect(pre.headers.get('access-control-allow-methods')).toBe('POST');
    expect(pre.headers.get('access-control-allow-headers')).toBe('content-type');
    const refused = await fetch(`${f.t.url}/v1/client/order`, { method: 'POST', headers: { origin: gameOrigin, 'content-type': 'application/json' }, body: '{"order_token":"nope"}' });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe('*');
    expect(refused.headers.get('access-control-expose-headers')).toBe('retry-after, x-trace-id');
    // The operator API is not for web pages of other origins.
    expect((await admin(f.t, 'GET', '/admin/v1/games')).headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe.skipIf(!haveChromium('checkout client browser test'))('the library in a game page of another origin', () => {
  it('pay(token, "sandbox") pays at once; getOrder reads the order', async () => {
    const o = await f.order();
    const page = await openGame();
    const paid = (await inPage(page, (lib, token) => lib.pay(token, 'sandbox'), o.order_token)) as PayResult;
    expect(paid).toMatchObject({ order_id: o.order_id, status: 'paid', amount: 600, currency: 'CNY' });
    expect(paid.action).toBeUndefined();
    const order = (await inPage(page, (lib, token) => lib.getOrder(token), o.order_token)) as ClientOrder;
    expect(['paid', 'delivered']).toContain(order.status);
    await page.close();
  });

  it('pay(token, "wechat") answers the QR action; waitForPayment follows the order until the stand-in\'s callback pays it', async () => {
    const o = await f.order();
    const page = await openGame();
    const started = (await inPage(page, (lib, token) => lib.pay(token, 'wechat'), o.order_token)) as PayResult;
    expect(started.status).toBe('created');
    expect(started.action).toEqual({ type: 'qr', code_url: f.wx.transactions.get(o.order_id)!.answer.code_url });
    // The library's QR code URL shows the code as an image in the game's page.
    const width = await inPage(
      page,
      (lib, token) =>
        new Promise<number>((resolve, reject) => {
          const img = document.createElement('img');
          img.onload = () => resolve(img.naturalWidth);
          img.onerror = () => reject(new Error('the QR image did not load'));
          img.src = lib.qrCodeUrl(token);
        }),
      o.order_token,
    );
    expect(width).toBeGreaterThan(0);
    await page.evaluate(
      ([token]) => {
        const w = globalThis as unknown as { seen: string[]; settled?: unknown; checkout: Lib };
        w.seen = [];
        void w.checkout.waitForPayment(token!, { intervalMs: 100, onStatus: (x) => w.seen.push(x.status) }).then((x) => (w.settled = x));
      },
      [o.order_token],
    );
    await page.waitForFunction(() => (globalThis as unknown as { seen: string[] }).seen.length >= 2);
    expect((await f.wx.paymentCallback(f.wx.pay(o.order_id))).status).toBe(204);
    await page.waitForFunction(() => (globalThis as unknown as { settled?: unknown }).settled !== undefined);
    const settled = await page.evaluate(() => (globalThis as unknown as { settled: ClientOrder }).settled);
    expect(['paid', 'delivered']).toContain(settled.status);
    const seen = await page.evaluate(() => (globalThis as unknown as { seen: string[] }).seen);
    expect(seen[0]).toBe('created');
    expect(seen.at(-1)).toBe(settled.status);
    await page.close();
  });

  it('openCheckout(token) opens the hosted checkout page of the service the library came from', async () => {
    const o = await f.order();
    const page = await openGame();
    const [popup] = await Promise.all([page.waitForEvent('popup'), page.evaluate((token) => void window.checkout.openCheckout(token), o.order_token)]);
    await popup.waitForLoadState();
    expect(popup.url()).toBe(`${f.t.url}/checkout/${o.order_token}`);
    expect(await popup.textContent('#pay-wechat')).toBe('WeChat Pay');
    await popup.close();
    await page.close();
  });

  it('refusals are CheckoutErrors with the ErrorResponse: unknown token 401, channel not enabled 403, unknown mode 400', async () => {
    const page = await openGame();
    expect(await inPage(page, (lib, token) => lib.pay(token, 'wechat'), 'ot_1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).toEqual({ name: 'CheckoutError', status: 401, error: 'invalid_token' });
    const noAlipay = await f.order(await f.gameWith(['wechat']));
    expect(await inPage(page, (lib, token) => lib.pay(token, 'alipay'), noAlipay.order_token)).toEqual({ name: 'CheckoutError', status: 403, error: 'channel_unavailable' });
    expect(await inPage(page, (lib, token) => lib.pay(token, 'wechat', { mode: 'jsapi' }), noAlipay.order_token)).toEqual({ name: 'CheckoutError', status: 400, error: 'invalid_request' });
    await page.close();
  });
});

describe('the library in Node (the package export)', () => {
  it('needs a baseUrl when not loaded from a service; takes one with a trailing slash; a service that cannot be reached is network_error', async () => {
    expect(() => createCheckoutClient()).toThrow(/baseUrl is required/);
    const c = createCheckoutClient({ baseUrl: `${f.t.url}/` });
    expect(c.checkoutUrl('ot_x')).toBe(`${f.t.url}/checkout/ot_x`);
    const o = await f.order();
    expect((await c.getOrder(o.order_token)).order_id).toBe(o.order_id);
    const err = await c.pay('nope', 'sandbox').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CheckoutError);
    expect(err).toMatchObject({ status: 401, error: 'invalid_token' });
    const down = await createCheckoutClient({ baseUrl: 'http://127.0.0.1:1' }).getOrder('x').catch((e: unknown) => e);
    expect(down).toMatchObject({ status: 0, error: 'network_error' });
  });

  it('waitForPayment stops at an expired order, and at once when its signal is aborted', async () => {
    const c = createCheckoutClient({ baseUrl: f.t.url });
    const o = await f.order();
    const stop = new AbortController();
    const waiting = c.waitForPayment(o.order_token, { intervalMs: 60_000, signal: stop.signal });
    stop.abort(new Error('player left'));
    await expect(waiting).rejects.toThrow('player left');
    f.clock.advance(31 * 60_000);
    expect((await c.waitForPayment(o.order_token)).status).toBe('expired');
  });
});
