import { expect } from 'vitest';
import type { Clock } from '../../src/lib/clock.js';
import { AlipayStandIn, makeAlipayApp, type AlipayApp } from './alipay.js';
import { Receiver } from './receiver.js';
import { admin, createGame, startService, type TestGame, type TestService } from './service.js';

/**
 * What the alipay tests run against: the Alipay stand-in with one application, a service whose
 * ALIPAY_GATEWAY_URL is the stand-in, and a receiver of the games' signed notifications, all
 * on one clock (the system's unless given).
 */
export class AlipayFixture {
  readonly alipay: AlipayStandIn;
  readonly app = makeAlipayApp();
  readonly keys = new Map<string, string[]>();
  receiver!: Receiver;
  t!: TestService;

  constructor(private readonly clock?: Clock) {
    this.alipay = new AlipayStandIn(clock ? () => clock.now() : Date.now);
  }

  async start(env: Record<string, string> = {}): Promise<this> {
    await this.alipay.start();
    this.alipay.addApp(this.app);
    this.receiver = await new Receiver({ keys: this.keys, now: () => (this.clock ?? Date).now() }).start();
    this.t = await startService({ clock: this.clock, env: { ALIPAY_GATEWAY_URL: this.alipay.url, NOTIFY_POLL_INTERVAL_MS: '50', ...env } });
    return this;
  }

  async stop(): Promise<void> {
    await this.t?.stop();
    await this.receiver?.close();
    await this.alipay.close();
  }

  /** The PUT body of an alipay channel for application `a`, with Alipay's key. */
  settings(a: AlipayApp = this.app, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return { enabled: true, app_id: a.appId, app_private_key: a.privateKeyPem, alipay_public_key: this.alipay.publicKeyPem, ...extra };
  }

  /** A new game whose alipay channel is application `a`'s; the receiver knows its key. */
  async game(a: AlipayApp = this.app): Promise<TestGame> {
    const g = await createGame(this.t);
    this.keys.set(g.gameId, [g.secret]);
    const r = await admin(this.t, 'PUT', `/admin/v1/games/${g.gameId}/channels/alipay`, this.settings(a));
    expect(r.status, r.text).toBe(200);
    return g;
  }
}
