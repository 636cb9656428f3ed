import type { StoreDatabase } from '../db/database.js';
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { OrderRow, OrderStore } from '../orders/store.js';
import { AlipayClients } from './alipay/client.js';
import { AlipayProvider } from './alipay/index.js';
import { AlipayNotifications } from './alipay/notify.js';
import { registerAlipayRoutes } from './alipay/routes.js';
import { AppleProvider } from './apple/index.js';
import { AppleNotifications } from './apple/notifications.js';
import type { TokenLimit } from '../checkout/routes.js';
import { registerAppleRoutes } from './apple/routes.js';
import { AppleTransactions } from './apple/transactions.js';
import { AppleVerifiers } from './apple/verifier.js';
import { AppAccountTokens } from './apple/store.js';
import { registerPaymentAdminRoutes } from './admin-routes.js';
import { registerChannelRoutes } from './channel-routes.js';
import { ChannelService } from './channel-service.js';
import { ChannelStore } from './channel-store.js';
import { GoogleProvider } from './google/index.js';
import { PlayApi } from './google/play-api.js';
import { GooglePurchaseStore } from './google/store.js';
import type { PaymentProvider } from './provider.js';
import { SandboxProvider } from './sandbox/index.js';
import { WechatCallbacks } from './wechat/callbacks.js';
import { WechatProvider } from './wechat/index.js';
import { registerWechatRoutes } from './wechat/routes.js';
import type { PaymentService } from './service.js';
import { PaymentStore } from './store.js';
import type { ProviderPayments } from './provider-payments/service.js';
import { ProviderPaymentStore } from './provider-payments/store.js';
import type { ApiApp } from '../http/route-info.js';

export interface PaymentChannelsDeps {
  database: StoreDatabase;
  clock: Clock;
  ids: IdGenerator;
  secrets: SecretBox;
  publicBaseUrl: string;
  appleRootCerts: Buffer[];
  /** GOOGLE_API_BASE_URL and GOOGLE_API_TIMEOUT_MS. */
  google: { apiBaseUrl: string; timeoutMs: number };
  log: Logger;
  /** ALIPAY_GATEWAY_URL. */
  alipayGatewayUrl: string;
  /** WECHATPAY_BASE_URL. */
  wechatpayBaseUrl: string;
}

/** The payment channels of this service and the store of games' channel settings. */
export interface PaymentChannels {
  providers: PaymentProvider[];
  channels: ChannelService;
  store: PaymentStore;
  tokens: AppAccountTokens;
  google: { api: PlayApi; purchases: GooglePurchaseStore };
  verifiers: AppleVerifiers;
  /** Payments held open at providers and refunds requested from them. */
  open: ProviderPaymentStore;
  alipay: AlipayClients;
}

/** Every channel this service offers, one folder each (payments.md 1). */
export function createPaymentChannels(d: PaymentChannelsDeps): PaymentChannels {
  const store = new PaymentStore(d.database);
  const tokens = new AppAccountTokens(d.database);
  const google = { api: new PlayApi({ baseUrl: d.google.apiBaseUrl, timeoutMs: d.google.timeoutMs, log: d.log }), purchases: new GooglePurchaseStore(d.database) };
  const alipay = new AlipayClients(d.alipayGatewayUrl, () => d.clock.now());
  const providers: PaymentProvider[] = [
    new SandboxProvider(),
    new AppleProvider({ rootCerts: d.appleRootCerts, tokens, payments: store, clock: d.clock }),
    new GoogleProvider({ payments: store, purchases: google.purchases, api: google.api }),
    new AlipayProvider({ clients: alipay, notifyUrl: (gameId) => channels.callbackUrl('alipay', gameId) as string }),
    new WechatProvider({ baseUrl: d.wechatpayBaseUrl, clock: d.clock, callbackUrl: (gameId) => `${d.publicBaseUrl}/v1/callbacks/wechat/${encodeURIComponent(gameId)}` }),
  ];
  const channels = new ChannelService({
    store: new ChannelStore(d.database),
    providers,
    secrets: d.secrets,
    clock: d.clock,
    ids: d.ids,
    publicBaseUrl: d.publicBaseUrl,
  });
  return { providers, channels, store, tokens, verifiers: new AppleVerifiers(d.appleRootCerts), google, open: new ProviderPaymentStore(d.database), alipay };
}

export interface PaymentRouteDeps {
  clock: Clock;
  payments: PaymentService;
  providerPayments: ProviderPayments;
  orders: OrderStore;
  /** The client API's order_token check (401 invalid_token) and status view. */
  authorize: (orderToken: string) => Promise<OrderRow>;
  clientStatus: (order: OrderRow) => string;
  limitToken: TokenLimit;
}

/** The admin API of channel settings and each channel's client and callback routes. */
export function registerPaymentRoutes(app: ApiApp, p: PaymentChannels, d: PaymentRouteDeps): AppleTransactions {
  registerChannelRoutes(app, p.channels, p.providers);
  registerPaymentAdminRoutes(app, p.store);
  const transactions = new AppleTransactions({ payments: d.payments, channels: p.channels, tokens: p.tokens, orders: d.orders, verifiers: p.verifiers, authorize: d.authorize, clientStatus: d.clientStatus });
  const notifications = new AppleNotifications({ payments: d.payments, channels: p.channels, transactions });
  registerAppleRoutes(app, { transactions, notifications, limitToken: d.limitToken });
  registerAlipayRoutes(app, { notifications: new AlipayNotifications({ providerPayments: d.providerPayments, channels: p.channels, orders: d.orders, clients: p.alipay }) });
  const wechat = p.providers.find((x): x is WechatProvider => x instanceof WechatProvider);
  if (wechat) registerWechatRoutes(app, new WechatCallbacks({ provider: wechat, channels: p.channels, providerPayments: d.providerPayments, clock: d.clock }));
  return transactions;
}
