import type { DomainModule, Infra } from '../wiring/infra.js';
import { registerOrderAdminRoutes } from './admin-routes.js';
import { OrderAdminService, type OrderAdminDeps } from './admin-service.js';
import { OrderAdminStore } from './admin-store.js';
import { OrderLifecycle } from './lifecycle.js';
import { registerOrderRoutes } from './routes.js';
import { OrderService, type PurchaseGuard } from './service.js';
import { OrderStore } from './store.js';
import { OrderSweeper } from './sweeper.js';

/** What the operator API's refunds and cancels ask of the payments domain. */
export type OrderPayments = Required<Pick<OrderAdminDeps, 'onRefunded' | 'checkRefund' | 'providerRefund' | 'onCanceled'>>;

export interface OrdersDeps extends Infra {
  /** Checks a purchase against the player's limits (the compliance domain). */
  guard: PurchaseGuard;
  /** The payments domain, which is built from this one: read when an operator acts. */
  payments: () => OrderPayments;
}

export interface Orders extends DomainModule {
  store: OrderStore;
  /** Every change of an order's status, with its event and notification. */
  lifecycle: OrderLifecycle;
  service: OrderService;
  sweeper: OrderSweeper;
}

/** Orders: the server API that creates them, the operator API, and the expiry sweeper. */
export function createOrders(d: OrdersDeps): Orders {
  const { database, config, clock, ids, logger } = d;
  const store = new OrderStore(database);
  const lifecycle = new OrderLifecycle({ store, ids });
  const service = new OrderService({
    store,
    clock,
    ids,
    guard: d.guard,
    refuseInternalUrls: d.refuseInternalUrls,
    onIdCollision: (orderId) => logger.warn({ order_id: orderId, node_id: config.nodeId }, 'a new order id was taken already and was replaced: give every instance its own NODE_ID'),
    metrics: d.metrics,
  });
  const payments = d.payments;
  const admin = new OrderAdminService({
    store,
    views: new OrderAdminStore(database),
    lifecycle,
    clock,
    ids,
    publicBaseUrl: config.publicBaseUrl,
    onRefunded: (orderId) => payments().onRefunded(orderId),
    checkRefund: (orderId) => payments().checkRefund(orderId),
    providerRefund: (orderId, actor, reason) => payments().providerRefund(orderId, actor, reason),
    onCanceled: (orderId) => payments().onCanceled(orderId),
  });
  const sweeper = new OrderSweeper({
    store,
    lifecycle,
    clock,
    intervalMs: config.sweepIntervalMs,
    onError: (err) => logger.error({ err }, 'order expiry sweep failed'),
  });
  return {
    store,
    lifecycle,
    service,
    sweeper,
    registerRoutes: (app) => {
      registerOrderRoutes(app, service);
      registerOrderAdminRoutes(app, admin);
    },
    jobs: [sweeper],
  };
}
