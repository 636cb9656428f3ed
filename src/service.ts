import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import type { Database } from './db/index.js';
import type { GameService } from './games/service.js';
import { registerOpenApi } from './apidocs/openapi.js';
import { registerApiDocsRoutes } from './apidocs/routes.js';
import { packageVersion } from './lib/package-info.js';
import { registerHealthRoutes } from './http/health.js';
import { defaultConsoleDir, registerConsoleRoutes } from './http/console.js';
import type { ApiApp } from './http/route-info.js';
import { systemClock, type Clock } from './lib/clock.js';
import { IdGenerator } from './lib/ids.js';
import { SecretBox } from './lib/secret-box.js';
import type { SecretsKey } from './lib/secrets-key.js';
import type { NotificationDispatcher } from './notifications/dispatcher.js';
import type { RoleCache } from './bindings/role-cache.js';
import type { PartnerService } from './partners/service.js';
import type { PaymentService } from './payments/service.js';
import type { ChannelService } from './payments/channel-service.js';
import type { ProviderPaymentJob } from './payments/provider-payments/job.js';
import type { ReconciliationSchedule } from './payments/reconciliation/schedule.js';
import { NPPA_TIMEOUT_MS } from './compliance/nppa-client.js';
import { ServiceMetrics } from './observability/metrics.js';
import { installRequestObservability, registerMetricsRoute } from './observability/http.js';
import { createRateLimiter } from './ratelimit/index.js';
import { openServiceDatabase } from './lifecycle/database.js';
import { createReadiness } from './lifecycle/readiness.js';
import { Shutdown, type ShutdownSteps } from './lifecycle/shutdown.js';
import { authDispatch, requestLimits } from './wiring/auth.js';
import { createServer } from './wiring/http.js';
import type { BackgroundJob, DomainModule, Infra } from './wiring/infra.js';
import { createBindings } from './bindings/index.js';
import { createCheckout } from './checkout/index.js';
import { createCompliance } from './compliance/index.js';
import { createGames } from './games/index.js';
import { createNotifications } from './notifications/index.js';
import { createOperators } from './operators/index.js';
import { createOrders } from './orders/index.js';
import { createPartners } from './partners/index.js';
import { createPayments } from './payments/index.js';
import { createSessions } from './sessions/index.js';

export type { BackgroundJob };

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  secretsKey: Buffer;
  /** Where secretsKey came from (main.ts): recorded, and named when it does not open the stored secrets. */
  secretsKeySource?: SecretsKey;
  clock?: Clock;
}

export interface Service {
  app: ApiApp;
  database: Database;
  games: GameService;
  partners: PartnerService;
  /** Role data cache of the binding query (observable by tests and metrics). */
  roleCache: RoleCache;
  /** Delivers notifications; kick() after a transaction that wrote some commits. */
  dispatcher: NotificationDispatcher;
  /** Prometheus metrics; domains report through its DomainMetrics methods. */
  metrics: ServiceMetrics;
  /** Payment confirmations enter here (provider callbacks; tests drive the provider interface). */
  payments: PaymentService;
  /** Games' payment channel settings. */
  channels: ChannelService;
  /** Queries open WeChat Pay/Alipay payments and pending refunds (lost callbacks); runOnce() in tests. */
  providerPaymentJob: ProviderPaymentJob;
  /** Reconciles the previous day of every game's wechat and alipay channels; runOnce() in tests. */
  reconciliationSchedule: ReconciliationSchedule;
  jobs: BackgroundJob[];
  listen(): Promise<string>;
  /**
   * Graceful stop: with SHUTDOWN_DELAY_MS, first /readyz answers 503 for that long while every
   * other request is served; then refuse new requests, finish in-flight ones, stop jobs, close
   * the database. `now` skips (or cuts short) the delay.
   */
  stop(opts?: { now?: boolean }): Promise<void>;
}

/**
 * The composition root: opens the database, builds each domain from its factory and the shared
 * infrastructure, mounts the routes and collects the background jobs. Nothing runs at import
 * time.
 */
export async function createService(opts: ServiceOptions): Promise<Service> {
  const { config, logger } = opts;
  const clock = opts.clock ?? systemClock;
  // SECRETS_KEY_PREVIOUS: during a key rotation, values sealed with the old key still open.
  const secrets = new SecretBox(opts.secretsKey, config.secretsKeyPrevious ? [config.secretsKeyPrevious] : []);
  const database = await openServiceDatabase({ config, logger, secrets, secretsKeySource: opts.secretsKeySource ?? null, clock });
  const ids = new IdGenerator(config.nodeId ?? undefined);
  const metrics = new ServiceMetrics(database, { nodeId: config.nodeId });
  const limiter = await createRateLimiter({ redisUrl: config.redisUrl, keyPrefix: config.redisKeyPrefix, production: config.production, clock, logger });
  const limits = requestLimits(config, limiter, metrics);
  const infra: Infra = { config, logger, clock, ids, secrets, database, metrics, refuseInternalUrls: config.production && !config.allowPrivateUrls };

  // Each domain is built after the domains it is built from. What one uses of a domain built
  // after it is a function, called only once requests and jobs run: compliance reads games and
  // sessions, orders' refunds go through payments, payments wake notifications and check an
  // order_token through checkout.
  const compliance = createCompliance({
    ...infra,
    games: (id) => games.service.snapshot(id),
    storedGame: (id) => games.service.stored(id),
    onlineByDay: (gameId, comboId) => sessions.service.onlineByDay(gameId, comboId),
  });
  const orders = createOrders({ ...infra, guard: compliance.guard, payments: () => payments.orderPayments });
  const payments = createPayments({ ...infra, orders, notify: () => notifications.dispatcher.kick(), client: () => checkout.service, limitToken: limits.limitToken });
  const games = createGames({ ...infra, sandbox: payments.channels });
  const snapshot = (gameId: string) => games.service.snapshot(gameId);
  const sessions = createSessions({ ...infra, games: snapshot });
  const notifications = createNotifications({ ...infra, orders: orders.lifecycle, keys: games.service });
  const checkout = createCheckout({ ...infra, orders: orders.store, games: snapshot, payments: payments.service, channels: (id) => payments.channels.forGame(id), limitToken: limits.limitToken });
  const partners = createPartners(infra);
  const bindings = createBindings({ ...infra, games: games.service, partners: partners.service });
  const operators = createOperators({ ...infra, limiter, adminToken: limits.adminToken, onLimited: limits.onLimited });

  const shutdown = new Shutdown({
    delayMs: config.shutdownDelayMs,
    timeoutMs: config.shutdownTimeoutMs,
    // Never shorter than a notification attempt or a national-system request in flight (each
    // has its own time-out), so a healthy stop is never cut.
    releaseGraceMs: Math.max(config.shutdownTimeoutMs, config.notify.timeoutMs + 2000, NPPA_TIMEOUT_MS + 2000),
    logger,
  });
  const { app, shedding } = createServer({
    config,
    logger,
    clock,
    metrics,
    hooks: {
      isDraining: () => shutdown.draining,
      rateLimit: limits.rateLimit,
      ...authDispatch({ games: games.service, partners: partners.service, admin: operators.authenticate, clock }),
    },
  });

  // Operator scope checks apply to every operator route: installed before any is registered.
  operators.install(app);
  // The OpenAPI generator listens to route registration: it goes first.
  await registerOpenApi(app, { publicBaseUrl: config.publicBaseUrl, version: packageVersion() });
  registerApiDocsRoutes(app);
  // production: one log line and one metrics sample per request; GET /metrics.
  installRequestObservability(app, metrics);
  registerMetricsRoute(app, metrics, limits.metricsToken);
  const readiness = createReadiness(database, () => shutdown.leaving);
  registerHealthRoutes(app, readiness);
  metrics.watchReadiness(readiness);
  const domains: DomainModule[] = [games, orders, checkout, payments, sessions, partners, bindings, notifications, compliance, operators];
  for (const domain of domains) domain.registerRoutes(app);
  registerConsoleRoutes(app, { dir: defaultConsoleDir() });

  const jobs = domains.flatMap((d) => d.jobs);
  const steps: ShutdownSteps = {
    server: app,
    release: async () => {
      await Promise.all(jobs.map((j) => j.stop()));
      shedding.close();
      for (const domain of domains) await domain.close?.();
      await limiter.close();
      await metrics.close();
      await database.close();
    },
  };
  return {
    app,
    database,
    games: games.service,
    partners: partners.service,
    roleCache: bindings.roleCache,
    dispatcher: notifications.dispatcher,
    metrics,
    payments: payments.service,
    channels: payments.channels,
    providerPaymentJob: payments.providerPaymentJob,
    reconciliationSchedule: payments.reconciliationSchedule,
    jobs,
    async listen() {
      const address = await app.listen({ port: config.port, host: config.host });
      shedding.start();
      for (const j of jobs) j.start();
      return address;
    },
    stop: (stopOpts = {}) => shutdown.stop(steps, stopOpts),
  };
}
