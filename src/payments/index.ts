import type { Database } from '../db/index.js';
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
import { PaymentService } from './service.js';
import { PaymentStore } from './store.js';
import { ProviderPayments } from './provider-payments/service.js';
import { ProviderPaymentJob } from './provider-payments/job.js';
import { createGoogleRuntime } from './google/runtime.js';
import { registerReconciliationRoutes } from './reconciliation/routes.js';
import { ReconciliationSchedule } from './reconciliation/schedule.js';
import { ReconciliationService } from './reconciliation/service.js';
import type { OrderPayments } from '../orders/index.js';
import type { OrderLifecycle } from '../orders/lifecycle.js';
import type { DomainModule, Infra } from '../wiring/infra.js';
import { ProviderPaymentStore } from './provider-payments/store.js';
import type { ApiApp } from '../http/route-info.js';

interface PaymentChannelsDeps {
  database: Database;
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
function createPaymentChannels(d: PaymentChannelsDeps): PaymentChannels {
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

interface PaymentRouteDeps {
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
function registerPaymentRoutes(app: ApiApp, p: PaymentChannels, d: PaymentRouteDeps): AppleTransactions {
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

/** How often the reconciliation schedule looks for a day to reconcile (two reads when nothing is due). */
const RECONCILE_CHECK_MS = 60_000;

/** The client API's view of an order behind its order_token (the checkout domain). */
export interface ClientOrders {
  /** 401 invalid_token for an unknown, forged or tampered token. */
  authorize(orderToken: string): Promise<OrderRow>;
  clientStatus(order: OrderRow): string;
}

export interface PaymentsDeps extends Infra {
  orders: { store: OrderStore; lifecycle: OrderLifecycle };
  /** Wakes the notification dispatcher after a commit that queued a notification. */
  notify: () => void;
  /** The checkout domain, which is built from this one: read when a request comes. */
  client: () => ClientOrders;
  limitToken: TokenLimit;
}

export interface Payments extends DomainModule {
  /** Games' payment channel settings. */
  channels: ChannelService;
  /** Payment confirmations enter here (provider callbacks; tests drive the provider interface). */
  service: PaymentService;
  /** Queries open WeChat Pay/Alipay payments and pending refunds (lost callbacks). */
  providerPaymentJob: ProviderPaymentJob;
  /** Reconciles the previous day of every game's wechat and alipay channels. */
  reconciliationSchedule: ReconciliationSchedule;
  /** The refunds and cancels of the operator API (the orders domain). */
  orderPayments: OrderPayments;
}

/** Payment channels, payments and refunds at providers, reconciliation, and their routes. */
export function createPayments(d: PaymentsDeps): Payments {
  const { database, config, clock, ids, logger, notify, limitToken } = d;
  const { store: orders, lifecycle } = d.orders;
  const p = createPaymentChannels({
    database,
    clock,
    ids,
    secrets: d.secrets,
    publicBaseUrl: config.publicBaseUrl,
    appleRootCerts: config.appleRootCerts,
    google: config.google,
    log: logger,
    alipayGatewayUrl: config.alipayGatewayUrl,
    wechatpayBaseUrl: config.wechatpayBaseUrl,
  });
  const { channels } = p;
  const service = new PaymentService({ payments: p.store, orders, lifecycle, providers: p.providers, open: p.open, clock, ids, onPaid: notify, onRefunded: notify, metrics: d.metrics });
  const providerPayments = new ProviderPayments({ store: p.open, payments: service, channels, orders, lifecycle, clock, ids, onRefunded: notify });
  const providerPaymentJob = new ProviderPaymentJob({ store: p.open, service: providerPayments, orders, clock, logger: logger.child({ job: 'provider-payments' }), intervalMs: config.sweepIntervalMs });
  const authorize = (token: string) => d.client().authorize(token);
  const google = createGoogleRuntime({
    api: p.google.api,
    store: p.google.purchases,
    payments: service,
    orders,
    channels,
    clock,
    log: logger,
    pushJwksUrl: config.google.pushJwksUrl,
    timeoutMs: config.google.timeoutMs,
    authorize,
    limitToken,
    consumeIntervalMs: Math.max(config.sweepIntervalMs, 5000),
  });
  const reconciliations = new ReconciliationService({ db: database.db, payments: service, providerPayments, channels, orders, clock, ids });
  const reconciliationSchedule = new ReconciliationSchedule({
    db: database.db,
    service: reconciliations,
    channels: p.providers.filter((x) => x.gateway?.statement).map((x) => x.name),
    clock,
    logger: logger.child({ job: 'reconciliation' }),
    hour: config.reconcile.hour,
    intervalMs: RECONCILE_CHECK_MS,
  });
  const orderPayments: OrderPayments = {
    onRefunded: notify,
    checkRefund: (orderId) => service.checkOperatorRefund(orderId),
    // WeChat Pay and Alipay refunds settle later (refund_pending); Google Play's is made at once
    // before the order is refunded here; the sandbox's needs no provider.
    providerRefund: async (orderId, actor, reason) => {
      const requested = await providerPayments.requestRefund(orderId, actor, reason);
      if (requested) return requested;
      const current = await orders.findById(orders.db, orderId);
      if (current) await service.refundAtProvider(current, (id) => channels.forGame(id));
      return null;
    },
    onCanceled: (orderId) => void providerPayments.checkSoon(orderId).catch((err: unknown) => logger.warn({ err, order_id: orderId }, 'the provider payment of a canceled order is closed by the next check')),
  };
  return {
    channels,
    service,
    providerPaymentJob,
    reconciliationSchedule,
    orderPayments,
    registerRoutes: (app) => {
      registerReconciliationRoutes(app, reconciliations);
      registerPaymentRoutes(app, p, { clock, payments: service, providerPayments, orders, authorize, clientStatus: (order) => d.client().clientStatus(order), limitToken });
      google.register(app);
    },
    jobs: [providerPaymentJob, ...(config.reconcile.schedule ? [reconciliationSchedule] : []), google.consumer],
  };
}
