import { OutboundClient } from '../lib/outbound.js';
import type { DomainModule, Infra } from '../wiring/infra.js';
import { NotificationDispatcher, type SigningKeys } from './dispatcher.js';
import { registerNotificationRoutes } from './routes.js';
import { NotificationService } from './service.js';
import { NotificationStore, type Deliverer } from './store.js';

export interface NotificationsDeps extends Infra {
  /** An acknowledged ship_order delivers its order through the orders domain's lifecycle. */
  orders: Deliverer;
  /** The game's current signing key (the games domain). */
  keys: SigningKeys;
}

export interface Notifications extends DomainModule {
  service: NotificationService;
  /** Delivers notifications; kick() after a transaction that wrote some commits. */
  dispatcher: NotificationDispatcher;
}

/** The notification outbox, its dispatcher, and the operator API of notifications. */
export function createNotifications(d: NotificationsDeps): Notifications {
  const { database, config, clock, ids } = d;
  const outbound = new OutboundClient({ blockPrivate: d.refuseInternalUrls, perHostConnections: config.notify.perHostConcurrency });
  const store = new NotificationStore(database, d.orders);
  const dispatcher = new NotificationDispatcher({
    metrics: d.metrics,
    store,
    keys: d.keys,
    outbound,
    clock,
    ids,
    logger: d.logger.child({ job: 'notifications' }),
    settings: config.notify,
  });
  const service = new NotificationService({ store, clock, ids, onRedeliver: () => dispatcher.kick() });
  return {
    service,
    dispatcher,
    registerRoutes: (app) => registerNotificationRoutes(app, service),
    jobs: [dispatcher],
    close: () => outbound.close(),
  };
}
