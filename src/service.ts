import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from './config/index.js';
import { DatabaseUnusableError, isStorageUnavailable, migrateToLatest, migrationsApplied, openDatabase, type Database } from './db/index.js';
import { Errors, isApiError } from './errors.js';
import { GameService, type GameSnapshot } from './games/service.js';
import { GameStore } from './games/store.js';
import { registerGameRoutes } from './games/routes.js';
import { registerOpenApi } from './apidocs/openapi.js';
import { registerApiDocsRoutes } from './apidocs/routes.js';
import { packageVersion } from './lib/package-info.js';
import { createFastify } from './http/app.js';
import type { AuthKind } from './lib/auth-kind.js';
import { screenSignedRequest, verifySignedRequest, type CallerDirectory } from './http/auth.js';
import { bearerGuard } from './http/bearer-guard.js';
import { bearerToken } from './http/auth.js';
import type { Refusal } from './http/refusals.js';
import { isPromise, type MaybePromise } from './lib/maybe-promise.js';
import { registerHealthRoutes } from './http/health.js';
import { LoadShedder } from './http/load-shedding.js';
import { clientAddressOf } from './http/client-address.js';
import { defaultConsoleDir, registerConsoleRoutes } from './http/console.js';
import { systemClock, type Clock } from './lib/clock.js';
import { IdGenerator } from './lib/ids.js';
import { SecretBox } from './lib/secret-box.js';
import { checkSecretsKey } from './secrets/key-check.js';
import type { SecretsKey } from './lib/secrets-key.js';
import { OutboundClient } from './lib/outbound.js';
import { NotificationDispatcher } from './notifications/dispatcher.js';
import { registerNotificationRoutes } from './notifications/routes.js';
import { NotificationService } from './notifications/service.js';
import { NotificationStore } from './notifications/store.js';
import { OrderService } from './orders/service.js';
import { OrderStore } from './orders/store.js';
import { registerOrderRoutes } from './orders/routes.js';
import { registerUnsupportedSdkRoutes } from './games/unsupported-routes.js';
import { BindingService } from './bindings/service.js';
import { BindingStore } from './bindings/store.js';
import { registerBindingRoutes } from './bindings/routes.js';
import { GmClient } from './bindings/gm.js';
import { RoleCache } from './bindings/role-cache.js';
import { PartnerService } from './partners/service.js';
import { PartnerStore } from './partners/store.js';
import { registerPartnerRoutes } from './partners/routes.js';
import { OrderLifecycle } from './orders/lifecycle.js';
import { OrderSweeper } from './orders/sweeper.js';
import { OrderAdminService } from './orders/admin-service.js';
import { OrderAdminStore } from './orders/admin-store.js';
import { registerOrderAdminRoutes } from './orders/admin-routes.js';
import { PaymentService } from './payments/service.js';
import type { ChannelService } from './payments/channel-service.js';
import { createPaymentChannels, registerPaymentRoutes } from './payments/index.js';
import { createGoogleRuntime } from './payments/google/runtime.js';
import { ProviderPaymentJob } from './payments/provider-payments/job.js';
import { ProviderPayments } from './payments/provider-payments/service.js';
import { registerReconciliationRoutes } from './payments/reconciliation/routes.js';
import { ReconciliationSchedule } from './payments/reconciliation/schedule.js';
import { ReconciliationService } from './payments/reconciliation/service.js';
import { CheckoutService } from './checkout/service.js';
import { registerCheckoutRoutes, type TokenLimit } from './checkout/routes.js';
import { registerSdkRoutes } from './checkout/sdk-routes.js';
import { SessionService } from './sessions/service.js';
// production: rate limits, metrics, request logs
import { limit, rateLimitHook, requestPolicy, tokenPolicy } from './http/rate-limit.js';
import { ServiceMetrics } from './observability/metrics.js';
import { installRequestObservability, registerMetricsRoute } from './observability/http.js';
import { createRateLimiter } from './ratelimit/index.js';
import type { RateLimitPolicy } from './ratelimit/limiter.js';
import { parseOrderToken } from './orders/token.js';
import { SessionStore } from './sessions/store.js';
import { registerSessionRoutes } from './sessions/routes.js';
import { SessionSweeper } from './sessions/sweeper.js';
import { ComplianceStore } from './compliance/store.js';
import { ComplianceGuard, PlayerService } from './compliance/players.js';
import { NPPA_TIMEOUT_MS, NppaClient } from './compliance/nppa-client.js';
import { NppaUploader } from './compliance/uploader.js';
import { registerAuditRoutes } from './admin/audit-routes.js';
import { registerComplianceRoutes } from './compliance/routes.js';
import type { ApiApp } from './http/route-info.js';
import { createOperators } from './operators/index.js';

export interface ServiceOptions {
  config: Config;
  logger: Logger;
  secretsKey: Buffer;
  /** Where secretsKey came from (main.ts): recorded, and named when it does not open the stored secrets. */
  secretsKeySource?: SecretsKey;
  clock?: Clock;
}

/** Background work (dispatchers, sweepers, uploaders): started after listen, stopped on drain. */
export interface BackgroundJob {
  start(): void;
  stop(): Promise<void>;
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

/** /readyz: how long the database may take to answer, and how often "migrated" is read again. */
const READY_TIMEOUT_MS = 2000;
const READY_RECHECK_MS = 5000;
/** How often the reconciliation schedule looks for a day to reconcile (two reads when nothing is due). */
const RECONCILE_CHECK_MS = 60_000;

/**
 * The composition root: builds each domain from its own store and the shared infrastructure,
 * and mounts the routes. Nothing here runs at import time.
 */
export async function createService(opts: ServiceOptions): Promise<Service> {
  const { config, logger } = opts;
  const clock = opts.clock ?? systemClock;
  const database = openDatabase(config.databaseUrl, {
    sqliteSynchronous: config.sqliteSynchronous,
    sqliteCheckpointIntervalMs: config.sqliteCheckpointIntervalMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  });
  // A failing checkpoint fails again every interval (a full disk): one line a minute.
  let lastCheckpointWarning = 0;
  database.checkpointer?.on('failure', (e: Error) => {
    if (Date.now() - lastCheckpointWarning < 60_000) return;
    lastCheckpointWarning = Date.now();
    logger.warn({ err: e }, 'SQLite WAL checkpoint on the worker thread failed; past the safety limit the writer checkpoints by itself');
  });
  try {
    await migrateToLatest(database, undefined, {
      lockTimeoutMs: config.databaseMigrationLockTimeoutMs,
      onLockTimeout: ({ migration, attempt, retryInMs }) =>
        logger.warn({ migration, attempt, retryInMs }, 'a migration waited too long for a table lock (a long transaction holds it); its attempt was rolled back and will be tried again'),
    });
  } catch (e) {
    await database.close();
    throw isStorageUnavailable(e) ? new DatabaseUnusableError(e) : e;
  }
  startPlayerIndexer(database, logger);
  const ids = new IdGenerator(config.nodeId ?? undefined);
  // SECRETS_KEY_PREVIOUS: during a key rotation, values sealed with the old key still open.
  const secrets = new SecretBox(opts.secretsKey, config.secretsKeyPrevious ? [config.secretsKeyPrevious] : []);
  try {
    await checkSecretsKey(database.db, secrets, opts.secretsKeySource ?? null, clock.now());
  } catch (e) {
    await database.close();
    throw e;
  }
  // notify_url and gm_url are caller-given: internal addresses are refused in production.
  const blockPrivate = config.production && !config.allowPrivateUrls;
  const outbound = new OutboundClient({
    blockPrivate,
    perHostConnections: config.notify.perHostConcurrency,
  });
  // A pool of its own: a game's GM often shares its notify_url's host, whose connections slow
  // notification attempts may all hold; a GM request queued behind them missed GM_TIMEOUT_MS.
  const gmOutbound = new OutboundClient({ blockPrivate });

  // ---- production: metrics and shared rate limits (src/observability, src/ratelimit) ----
  const metrics = new ServiceMetrics(database, { nodeId: config.nodeId });
  const limiter = await createRateLimiter({
    redisUrl: config.redisUrl,
    keyPrefix: config.redisKeyPrefix,
    production: config.production,
    clock,
    logger,
  });
  const onLimited = (p: RateLimitPolicy) => metrics.rateLimited(p.key.split(':', 1)[0] as string);
  const rateLimit = rateLimitHook({ limiter, policyFor: requestPolicy(config.clientRateLimitPerSecond), onLimited });
  const guard = (token: ReturnType<typeof bearerToken>, bucket: string, guessed: string) =>
    bearerGuard({ token, bucket, guessed, limiter, failuresPerMinute: config.adminAuthFailuresPerMinute, onLocked: onLimited });
  const authenticateAdmin = guard(bearerToken(config.adminToken, 'admin token', 'admin token is not valid'), 'admin-auth', 'admin tokens');
  const authenticateMetrics = config.metricsToken ? guard(bearerToken(config.metricsToken, 'METRICS_TOKEN', 'metrics token is not valid'), 'metrics-auth', 'metrics tokens') : null;
  const limitToken: TokenLimit = (reply, token) => {
    const policy = tokenPolicy(parseOrderToken(token)?.orderId ?? null, config.clientRateLimitPerSecond);
    return policy ? limit({ limiter, onLimited }, policy, reply) : undefined;
  };
  // ---- end production ----

  const paymentChannels = createPaymentChannels({
    database,
    clock,
    ids,
    secrets,
    publicBaseUrl: config.publicBaseUrl,
    appleRootCerts: config.appleRootCerts,
    google: config.google,
    log: logger,
    alipayGatewayUrl: config.alipayGatewayUrl,
    wechatpayBaseUrl: config.wechatpayBaseUrl,
  });
  const channels = paymentChannels.channels;
  const games = new GameService({
    store: new GameStore(database), sandbox: channels, clock, ids, secrets, refuseInternalUrls: blockPrivate,
    onKeyUseError: (err, gameId) => logger.warn({ err, game_id: gameId }, 'storing the key a game signed with failed'),
  });
  const snapshot = (gameId: string) => games.snapshot(gameId);
  const compliance = new ComplianceStore(database);
  const orderStore = new OrderStore(database);
  const orders = new OrderService({
    store: orderStore,
    clock,
    ids,
    guard: new ComplianceGuard(compliance),
    refuseInternalUrls: blockPrivate,
    onIdCollision: (orderId) => logger.warn({ order_id: orderId, node_id: config.nodeId }, 'a new order id was taken already and was replaced: give every instance its own NODE_ID'),
    metrics,
  });
  const sessions = new SessionService({
    store: new SessionStore(database),
    clock,
    ids,
    games: snapshot,
    timeoutMs: config.sessionTimeoutMs,
    metrics,
  });
  const players = new PlayerService({
    store: compliance,
    clock,
    ids,
    games: snapshot,
    onlineByDay: (gameId, comboId) => sessions.onlineByDay(gameId, comboId),
  });
  // The national system's base URL is operator configuration (not caller-given): no address blocking.
  const nppaClient = new NppaClient();
  const partners = new PartnerService({ store: new PartnerStore(database), clock, ids, secrets });
  const roleCache = new RoleCache({ clock, ttlMs: config.roleCacheTtlMs, staleTtlMs: config.roleStaleTtlMs });
  const bindings = new BindingService({
    store: new BindingStore(database),
    partnerSnapshot: (id) => partners.snapshot(id),
    gameSnapshot: (id) => games.snapshot(id),
    gm: new GmClient({ outbound: gmOutbound, clock, ids, timeoutMs: config.gmTimeoutMs }),
    roles: roleCache,
    clock,
    logger,
    recordGmError: (gameId, message) => games.recordGmError(gameId, message),
  });
  const lifecycle = new OrderLifecycle({ store: orderStore, ids });
  // An acknowledged ship_order delivers its order through the orders domain's lifecycle.
  const notificationStore = new NotificationStore(database, lifecycle);
  // Domains that write notifications (payments, refunds) call dispatcher.kick() after commit.
  const dispatcher = new NotificationDispatcher({
    metrics,
    store: notificationStore,
    keys: games,
    outbound,
    clock,
    ids,
    logger: logger.child({ job: 'notifications' }),
    settings: config.notify,
  });
  const notifications = new NotificationService({ store: notificationStore, clock, ids, onRedeliver: () => dispatcher.kick() });

  // Wakes the notification dispatcher after a commit that queued a notification.
  const kickNotifier = () => dispatcher.kick();
  const payments = new PaymentService({
    payments: paymentChannels.store,
    orders: orderStore,
    lifecycle,
    providers: paymentChannels.providers,
    open: paymentChannels.open,
    clock,
    ids,
    onPaid: kickNotifier,
    onRefunded: kickNotifier,
    metrics,
  });
  const checkout = new CheckoutService({ orders: orderStore, games: (id) => games.snapshot(id), payments, channels: (id) => channels.forGame(id), clock });
  const providerPayments = new ProviderPayments({ store: paymentChannels.open, payments, channels, orders: orderStore, lifecycle, clock, ids, onRefunded: kickNotifier });
  const providerPaymentJob = new ProviderPaymentJob({
    store: paymentChannels.open,
    service: providerPayments,
    orders: orderStore,
    clock,
    logger: logger.child({ job: 'provider-payments' }),
    intervalMs: config.sweepIntervalMs,
  });
  const orderAdmin = new OrderAdminService({
    store: orderStore,
    views: new OrderAdminStore(database),
    lifecycle,
    clock,
    ids,
    publicBaseUrl: config.publicBaseUrl,
    onRefunded: kickNotifier,
    checkRefund: (orderId) => payments.checkOperatorRefund(orderId),
    // WeChat Pay and Alipay refunds settle later (refund_pending); Google Play's is made at once
    // before the order is refunded here; the sandbox's needs no provider.
    providerRefund: async (orderId, actor, reason) => {
      const requested = await providerPayments.requestRefund(orderId, actor, reason);
      if (requested) return requested;
      const current = await orderStore.findById(orderStore.db, orderId);
      if (current) await payments.refundAtProvider(current, (id) => channels.forGame(id));
      return null;
    },
    onCanceled: (orderId) => void providerPayments.checkSoon(orderId).catch((err: unknown) => logger.warn({ err, order_id: orderId }, 'the provider payment of a canceled order is closed by the next check')),
  });
  const google = createGoogleRuntime({
    api: paymentChannels.google.api,
    store: paymentChannels.google.purchases,
    payments,
    orders: orderStore,
    channels,
    clock,
    log: logger,
    pushJwksUrl: config.google.pushJwksUrl,
    timeoutMs: config.google.timeoutMs,
    authorize: (token) => checkout.authorize(token),
    limitToken,
    consumeIntervalMs: Math.max(config.sweepIntervalMs, 5000),
  });
  const sweeper = new OrderSweeper({
    store: orderStore,
    lifecycle,
    clock,
    intervalMs: config.sweepIntervalMs,
    onError: (err) => logger.error({ err }, 'order expiry sweep failed'),
  });

  // A game or partner snapshot holds its keys: the signed caller is the snapshot with them.
  const signedCaller = <S extends { secrets: string[] }>(snap: MaybePromise<S | null>) =>
    isPromise(snap) ? snap.then(asCaller) : asCaller(snap);
  const asCaller = <S extends { secrets: string[] }>(snap: S | null) => (snap ? { record: snap, secrets: snap.secrets } : null);
  // A game's verified request tells which key it signs with (operators.md 2).
  const gameCaller = (snap: GameSnapshot | null) => (snap ? { record: snap, secrets: snap.secrets, keyUsed: games.keyUsed } : null);
  const directory: CallerDirectory<GameSnapshot, unknown> = {
    game: (id) => {
      const snap = games.lookup(id);
      return isPromise(snap) ? snap.then(gameCaller) : gameCaller(snap);
    },
    partner: (id) => signedCaller(partners.lookup(id)),
  };

  // Shutting down: `leaving` for SHUTDOWN_DELAY_MS (only /readyz says so, so that a load
  // balancer stops sending requests here), then `draining` (new requests refused, in-flight
  // ones finished).
  let leaving = false;
  let leaveNow: (() => void) | null = null;
  let draining = false;
  const shedding = new LoadShedder({
    maxInflight: config.maxInflightRequests,
    latencyTargetMs: config.admissionLatencyTargetMs,
    maxEventLoopDelayMs: config.maxEventLoopDelayMs || Number.POSITIVE_INFINITY,
    onShed: () => metrics.shed(),
    logger,
    bodyTimeoutMs: config.bodyTimeoutMs,
    maxInflightPerClient: Math.floor((config.maxInflightRequests * config.maxInflightPerClientPercent) / 100),
    clientOf: clientAddressOf(config.trustProxy),
  });
  metrics.watchAdmission({ limit: () => shedding.currentLimit, inProgress: () => shedding.inProgress });
  const operators = createOperators({ database, clock, ids, secrets, limiter, publicBaseUrl: config.publicBaseUrl, settings: config.operators, adminToken: authenticateAdmin, onLimited });
  const app = createFastify({
    logger,
    clock,
    // The request log's line for a request that never reached it (refusals.ts).
    onRefused: (r: Refusal) => {
      metrics.refusedBeforeRouting(r.reason, r.status);
      if (logger.isLevelEnabled('info')) logger.info({ status: r.status, reason: r.reason, traceId: r.traceId }, 'request refused before routing');
    },
    tls: config.tls,
    trustProxy: config.trustProxy,
    shedder: shedding,
    hooks: {
      isDraining: () => draining,
      rateLimit,
      screen: (req: FastifyRequest, kind: AuthKind) => {
        if (kind === 'game' || kind === 'partner') return screenSignedRequest(req, directory, kind, clock.now());
      },
      authenticate: (req: FastifyRequest, kind: AuthKind) => {
        if (kind === 'admin') return operators.authenticate(req);
        if (kind === 'game' || kind === 'partner') {
          const caller = verifySignedRequest(req, directory, kind, clock.now());
          const attach = (c: { record: unknown }) => void (req.caller = c.record);
          return isPromise(caller) ? caller.then(attach) : attach(caller);
        }
      },
    },
  });

  // Operator scope checks apply to every operator route: installed before any is registered.
  operators.install(app);
  // The OpenAPI generator listens to route registration: it goes first.
  await registerOpenApi(app, { publicBaseUrl: config.publicBaseUrl, version: packageVersion() });
  registerApiDocsRoutes(app);
  // production: one log line and one metrics sample per request; GET /metrics.
  installRequestObservability(app, metrics);
  registerMetricsRoute(app, metrics, authenticateMetrics);

  // Whether the database is migrated is read again every few seconds, not once: a database
  // replaced by an empty one (restored, recreated) must take the instance out.
  let migrated = false;
  let migratedAt = 0;
  const databaseReady = async (): Promise<void> => {
    await database.ping();
    if (!migrated || Date.now() - migratedAt > READY_RECHECK_MS) {
      migrated = await migrationsApplied(database.db);
      migratedAt = Date.now();
    }
  };
  const readiness = {
    check: async () => {
      // A database that takes connections but never answers must not hang the check (a
      // balancer's check would time out instead of seeing 503).
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), READY_TIMEOUT_MS)));
      try {
        if ((await Promise.race([databaseReady(), late])) === 'late') throw Errors.serviceUnavailable(`the database did not answer within ${READY_TIMEOUT_MS} ms`);
      } catch (e) {
        if (isApiError(e)) throw e;
        throw Errors.serviceUnavailable('database is unreachable');
      } finally {
        clearTimeout(timer);
      }
      if (!migrated) throw Errors.serviceUnavailable('database migrations are pending');
      if (leaving) throw Errors.serviceUnavailable('the service is shutting down');
    },
  };
  registerHealthRoutes(app, readiness);
  metrics.watchReadiness(readiness);
  registerGameRoutes(app, games);
  registerOrderRoutes(app, orders);
  registerUnsupportedSdkRoutes(app);
  registerOrderAdminRoutes(app, orderAdmin);
  const reconciliations = new ReconciliationService({ db: database.db, payments, providerPayments, channels, orders: orderStore, clock, ids });
  registerReconciliationRoutes(app, reconciliations);
  const reconciliationSchedule = new ReconciliationSchedule({
    db: database.db,
    service: reconciliations,
    channels: paymentChannels.providers.filter((p) => p.gateway?.statement).map((p) => p.name),
    clock,
    logger: logger.child({ job: 'reconciliation' }),
    hour: config.reconcile.hour,
    intervalMs: RECONCILE_CHECK_MS,
  });
  registerCheckoutRoutes(app, checkout, limitToken);
  registerSdkRoutes(app);
  registerPaymentRoutes(app, paymentChannels, {
    clock,
    payments,
    providerPayments,
    orders: orderStore,
    authorize: (token) => checkout.authorize(token),
    clientStatus: (order) => checkout.clientStatus(order),
    limitToken,
  });
  google.register(app);
  registerSessionRoutes(app, sessions);
  registerPartnerRoutes(app, partners);
  registerBindingRoutes(app, bindings);
  registerNotificationRoutes(app, notifications);
  registerComplianceRoutes(app, players);
  registerAuditRoutes(app, database.db);
  operators.register(app);
  registerConsoleRoutes(app, { dir: defaultConsoleDir() });

  const jobs: BackgroundJob[] = [
    dispatcher,
    sweeper,
    providerPaymentJob,
    ...(config.reconcile.schedule ? [reconciliationSchedule] : []),
    new SessionSweeper(sessions, config.sweepIntervalMs, logger),
    google.consumer,
    new NppaUploader({
      metrics,
      store: compliance,
      client: nppaClient,
      games: snapshot,
      storedGame: (gameId) => games.stored(gameId),
      clock,
      logger,
      baseUrl: config.nppaBaseUrl,
      pollIntervalMs: config.nppa.pollIntervalMs,
      retryBaseMs: config.nppa.retryBaseMs,
      rateLimitPauseMs: config.nppa.rateLimitPauseMs,
      concurrency: config.nppa.concurrency,
    }),
  ];
  let stopped: Promise<void> | null = null;
  return {
    app,
    database,
    games,
    partners,
    roleCache,
    dispatcher,
    metrics,
    payments,
    channels,
    providerPaymentJob,
    reconciliationSchedule,
    jobs,
    async listen() {
      const address = await app.listen({ port: config.port, host: config.host });
      for (const j of jobs) j.start();
      return address;
    },
    stop(opts: { now?: boolean } = {}) {
      if (opts.now) leaveNow?.();
      stopped ??= (async () => {
        if (config.shutdownDelayMs > 0 && !opts.now) {
          leaving = true;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, config.shutdownDelayMs);
            leaveNow = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          logger.info('draining');
        }
        draining = true;
        const force = setTimeout(() => {
          const server = app.server as unknown as { closeAllConnections?: () => void };
          server.closeAllConnections?.();
        }, config.shutdownTimeoutMs);
        force.unref();
        await app.close();
        clearTimeout(force);
        // A database that stopped answering would hold a job's last query, or the pool's close,
        // for ever: what follows gets one more grace period, then the stop fails (exit 1). It
        // is never shorter than a notification attempt or a national-system request in flight
        // (each has its own time-out), so a healthy stop is never cut.
        const jobsGrace = Math.max(config.shutdownTimeoutMs, config.notify.timeoutMs + 2000, NPPA_TIMEOUT_MS + 2000);
        await withinGrace(jobsGrace, async () => {
          await Promise.all(jobs.map((j) => j.stop()));
          shedding.close();
          await outbound.close();
          await gmOutbound.close();
          await limiter.close();
          await nppaClient.close();
          await metrics.close();
          await database.close();
        });
      })();
      return stopped;
    },
  };
}

/** Runs `work`; rejects if it has not finished within `ms`. */
async function withinGrace(ms: number, work: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`background jobs or the database did not stop within ${ms} ms (SHUTDOWN_TIMEOUT_MS, at least NOTIFY_TIMEOUT_MS + 2 s)`)), ms);
    timer.unref();
  });
  try {
    await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * SQLite: the worker that keeps a player's sessions indexed off the request path
 * (db/player-index.ts), started once the sessions table is migrated. A failing pass fails
 * again every second (a full disk): one warning a minute.
 */
function startPlayerIndexer(database: Database, logger: Logger): void {
  const indexer = database.startPlayerIndexer?.();
  let lastWarning = 0;
  indexer?.on('failure', (e: Error) => {
    if (Date.now() - lastWarning < 60_000) return;
    lastWarning = Date.now();
    logger.warn({ err: e }, 'the player index worker failed a pass; player listings stay exact and read more of the sessions table until it catches up');
  });
  indexer?.on('reset', () => logger.warn('the player index no longer matched the database (replaced, or rowids renumbered): it is being built again'));
}
