import { expect } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { AlipayStandIn, makeAlipayApp } from './alipay.js';
import type { CreatedOrder } from './orders.js';
import { admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './service.js';
import { WechatPayStandIn } from './wechatpay.js';

/**
 * What the hosted checkout and client library tests run against: a service on a manual clock
 * (orders expire when a test says so) whose WeChat Pay and Alipay are local stand-ins, and a
 * game with the wechat, alipay and sandbox channels on.
 */
export class CheckoutFixture {
  readonly clock = new ManualClock(Date.now());
  readonly wx = new WechatPayStandIn(() => this.clock.now());
  readonly alipay = new AlipayStandIn(() => this.clock.now());
  readonly alipayApp = makeAlipayApp();
  t!: TestService;
  /** wechat, alipay and sandbox on. */
  game!: TestGame;

  async start(): Promise<this> {
    await this.wx.start();
    await this.alipay.start();
    this.alipay.addApp(this.alipayApp);
    const env = { WECHATPAY_BASE_URL: this.wx.url, ALIPAY_GATEWAY_URL: this.alipay.url, PUBLIC_BASE_URL: 'https://pay.example.com', NOTIFY_POLL_INTERVAL_MS: '50' };
    this.t = await startService({ clock: this.clock, env });
    this.wx.deliverTo = (u) => this.t.url + new URL(u).pathname;
    this.game = await this.gameWith(['wechat', 'alipay']);
    return this;
  }

  async stop(): Promise<void> {
    await this.t?.stop();
    await this.wx.close();
    await this.alipay.close();
  }

  /** A new game with `channels` on (sandbox too unless `sandbox` is false). */
  async gameWith(channels: ('wechat' | 'alipay')[], sandbox = true): Promise<TestGame> {
    const g = await createGame(this.t, { sandbox_payments: sandbox });
    const settings = {
      wechat: this.wx.settings(),
      alipay: { enabled: true, app_id: this.alipayApp.appId, app_private_key: this.alipayApp.privateKeyPem, alipay_public_key: this.alipay.publicKeyPem },
    };
    for (const c of channels) {
      const r = await admin(this.t, 'PUT', `/admin/v1/games/${g.gameId}/channels/${c}`, settings[c]);
      expect(r.status, r.text).toBe(200);
    }
    return g;
  }

  /** create-order, signed at the service's time. */
  async order(g: TestGame = this.game, overrides: Record<string, unknown> = {}): Promise<CreatedOrder> {
    const r = await signed(this.t, g, 'POST', '/v1/server/create-order', orderBody(overrides), {}, this.clock.now());
    expect(r.status, r.text).toBe(200);
    return r.body as CreatedOrder;
  }
}
