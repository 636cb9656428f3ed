import type { GameSnapshot } from '../games/service.js';
import type { OrderStore } from '../orders/store.js';
import type { GameChannel } from '../payments/provider.js';
import type { PaymentService } from '../payments/service.js';
import type { DomainModule, Infra } from '../wiring/infra.js';
import { registerCheckoutRoutes, type TokenLimit } from './routes.js';
import { registerSdkRoutes } from './sdk-routes.js';
import { CheckoutService } from './service.js';

export interface CheckoutDomainDeps extends Infra {
  orders: OrderStore;
  games: (gameId: string) => Promise<GameSnapshot | null>;
  payments: PaymentService;
  channels: (gameId: string) => Promise<ReadonlyMap<string, GameChannel>>;
  /** The per-token rate limit of the client API. */
  limitToken: TokenLimit;
}

export interface Checkout extends DomainModule {
  service: CheckoutService;
}

/** The client purchase API, the hosted checkout page and the checkout client library. */
export function createCheckout(d: CheckoutDomainDeps): Checkout {
  const service = new CheckoutService({ orders: d.orders, games: d.games, payments: d.payments, channels: d.channels, clock: d.clock });
  return {
    service,
    registerRoutes: (app) => {
      registerCheckoutRoutes(app, service, d.limitToken);
      registerSdkRoutes(app);
    },
    jobs: [],
  };
}
