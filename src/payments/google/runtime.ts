import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.js';
import type { TokenLimit } from '../../checkout/routes.js';
import type { OrderRow, OrderStore } from '../../orders/store.js';
import type { ChannelService } from '../channel-service.js';
import type { PaymentService } from '../service.js';
import { GoogleClient } from './client.js';
import { GoogleConsumer } from './consumer.js';
import { GoogleNotifications } from './notifications.js';
import type { PlayApi } from './play-api.js';
import { GooglePurchases } from './purchases.js';
import { PushTokenVerifier } from './push-token.js';
import { registerGoogleRoutes } from './routes.js';
import type { GooglePurchaseStore } from './store.js';
import type { ApiApp } from '../../http/route-info.js';

export interface GoogleRuntimeDeps {
  api: PlayApi;
  store: GooglePurchaseStore;
  payments: PaymentService;
  orders: OrderStore;
  channels: ChannelService;
  clock: Clock;
  log: Logger;
  /** GOOGLE_PUSH_JWKS_URL and GOOGLE_API_TIMEOUT_MS. */
  pushJwksUrl: string;
  timeoutMs: number;
  /** The client API's order_token check and its per-token rate limit. */
  authorize: (orderToken: string) => Promise<OrderRow>;
  limitToken: TokenLimit;
  /** How often the consume job looks for owed purchases. */
  consumeIntervalMs: number;
}

/** The `google` channel's routes and its consume job, over the payment service. */
export function createGoogleRuntime(d: GoogleRuntimeDeps): { consumer: GoogleConsumer; register(app: ApiApp): void } {
  const log = d.log.child({ channel: 'google' });
  const purchases = new GooglePurchases({
    api: d.api,
    store: d.store,
    payments: d.payments,
    orders: d.orders,
    channel: async (gameId) => (await d.channels.forGame(gameId)).get('google'),
    clock: d.clock,
    log,
  });
  const client = new GoogleClient({ purchases, store: d.store, orders: d.orders, authorize: d.authorize, gamesSelling: (id) => d.store.gamesSelling(id) });
  const notifications = new GoogleNotifications({
    purchases,
    store: d.store,
    payments: d.payments,
    verifier: new PushTokenVerifier({ jwksUrl: d.pushJwksUrl, timeoutMs: d.timeoutMs, log }),
    callbackUrl: (gameId) => d.channels.callbackUrl('google', gameId) ?? '',
    log,
  });
  const consumer = new GoogleConsumer({ purchases, store: d.store, clock: d.clock, log, intervalMs: d.consumeIntervalMs });
  return { consumer, register: (app) => registerGoogleRoutes(app, { client, notifications, limitToken: d.limitToken }) };
}
