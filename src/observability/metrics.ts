import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/index.js';
import type { PlayerIndexPass } from '../db/player-index.js';
import type { OrderStatus } from '../db/schema.js';
import { ObservabilityStore } from './store.js';
import { RequestMetrics } from './request-metrics.js';

const ORDER_STATUSES: OrderStatus[] = ['created', 'paid', 'delivered', 'expired', 'canceled', 'refund_pending', 'refund_failed', 'refunded'];
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type AttemptResult = 'success' | 'failure';
export type SessionReport = 'enter' | 'leave';

/**
 * What other domains report to /metrics. Call sites stay one line and know nothing of
 * Prometheus: `metrics.notificationAttempt(gameId, 'success', latencyMs)`.
 */
export interface DomainMetrics {
  /** One delivery attempt of a notification: 2xx answer = success, anything else = failure. */
  notificationAttempt(gameId: string, result: AttemptResult, latencyMs?: number): void;
  /** A new order of the game (not a replay of a stored one). */
  orderCreated(gameId: string): void;
  /** A payment applied to an order of the game: `accepted` (the order became paid) or `flagged`. */
  payment(gameId: string, status: 'accepted' | 'flagged'): void;
  /** An enter-game or leave-game report of the game, counted as it is handled. */
  sessionReport(gameId: string, report: SessionReport): void;
  /** One upload batch to the national anti-addiction system. */
  nppaUpload(result: AttemptResult, events?: number): void;
}

/**
 * The service's Prometheus metrics, in a Registry of its own (not prom-client's global one,
 * so several services in one process, as in tests, never mix their numbers).
 */
export class ServiceMetrics implements DomainMetrics {
  readonly registry = new Registry();
  private readonly store: ObservabilityStore;
  private inflight: Promise<void> | null = null;

  /** Per-request HTTP series, kept as plain numbers (see RequestMetrics). */
  private readonly requests = new RequestMetrics(this.registry, LATENCY_BUCKETS);
  private readonly rateLimitedTotal = new Counter({
    name: 'combo_rate_limited_total',
    help: 'Requests refused with 429 rate_limited, by caller kind',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  private readonly refusedTotal = new Counter({
    name: 'combo_http_requests_refused_total',
    help: 'Requests answered before routing (malformed, timed out, unknown method, bad path, CONNECT, ...), by reason and status; not in combo_http_requests_total',
    labelNames: ['reason', 'status'] as const,
    registers: [this.registry],
  });
  private readonly shedTotal = new Counter({
    name: 'combo_http_requests_shed_total',
    help: 'Requests refused with 503 by load shedding (over MAX_INFLIGHT_REQUESTS or a saturated event loop), before routing',
    registers: [this.registry],
  });
  private admission: { limit(): number; inProgress(): number } | null = null;
  // game_id labels: game ids are made by operators (POST /admin/v1/games), a bounded set, so
  // each of these has at most (games x results) series (docs/operations.md, Metrics).
  private readonly notificationAttempts = new Counter({
    name: 'combo_notification_attempts_total',
    help: 'Notification delivery attempts, by game and result',
    labelNames: ['game_id', 'result'] as const,
    registers: [this.registry],
  });
  private readonly ordersCreated = new PerGame(
    new Counter({ name: 'combo_orders_created_total', help: 'Orders created (create-order replays not counted), by game', labelNames: ['game_id'] as const, registers: [this.registry] }),
  );
  private readonly payments = new Counter({
    name: 'combo_payments_total',
    help: 'Payments applied to orders, by game and status (accepted: the order became paid; flagged: kept for the operator)',
    labelNames: ['game_id', 'status'] as const,
    registers: [this.registry],
  });
  private readonly sessionReports = new Counter({
    name: 'combo_session_reports_total',
    help: 'enter-game and leave-game reports handled, by game and report',
    labelNames: ['game_id', 'report'] as const,
    registers: [this.registry],
  });
  private readonly enterReports = new PerGame(this.sessionReports, { report: 'enter' });
  private readonly leaveReports = new PerGame(this.sessionReports, { report: 'leave' });
  private readonly notificationsUndelivered = new Gauge({
    name: 'combo_notifications_undelivered',
    help: 'Notifications not delivered, by game and status (pending: not attempted yet; failing: its latest attempt failed, to be retried; failed: given up), read from the database on scrape',
    labelNames: ['game_id', 'status'] as const,
    registers: [this.registry],
  });
  private readonly notificationLatency = new Histogram({
    name: 'combo_notification_attempt_duration_seconds',
    help: 'Notification delivery attempt latency',
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });
  private readonly nppaUploads = new Counter({
    name: 'combo_nppa_uploads_total',
    help: 'Upload batches to the national anti-addiction system, by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly nppaUploadedEvents = new Counter({
    name: 'combo_nppa_uploaded_events_total',
    help: 'Session events in upload batches, by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly orders = new Gauge({
    name: 'combo_orders',
    help: 'Orders in the database by status (read from the database on scrape; same on every instance)',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  private readonly notificationsPending = new Gauge({
    name: 'combo_notifications_pending',
    help: 'Notifications not yet delivered nor given up (read from the database on scrape)',
    registers: [this.registry],
  });
  private readonly nppaPending = new Gauge({
    name: 'combo_nppa_events_pending',
    help: 'Session events waiting for upload to the national system (read from the database on scrape)',
    registers: [this.registry],
  });
  private readiness: { check(): Promise<void> } | null = null;
  private readonly ready = new Gauge({
    name: 'combo_ready',
    help: '1 when /readyz answers 200 (database reachable and migrated, not shutting down), else 0; checked on scrape',
    registers: [this.registry],
  });
  private readonly databaseUp = new Gauge({
    name: 'combo_database_up',
    help: '1 when the last scrape could read the database, else 0',
    registers: [this.registry],
  });
  private readonly pool = new Gauge({
    name: 'combo_db_pool_connections',
    help: 'PostgreSQL pool connections: total, idle, and waiting (requests queued for a connection)',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  private readonly checkpoints = new Counter({
    name: 'combo_sqlite_wal_checkpoints_total',
    help: 'SQLite WAL checkpoints that copied pages or failed, on the checkpoint worker thread (SQLITE_CHECKPOINT_INTERVAL_MS), by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly checkpointedPages = new Counter({
    name: 'combo_sqlite_wal_checkpointed_pages_total',
    help: 'WAL pages the checkpoint worker thread copied into the SQLite database file',
    registers: [this.registry],
  });

  private readonly writeLockWaits = new Counter({
    name: 'combo_sqlite_write_lock_waits_total',
    help: 'SQLite group-commit batches that found the write lock held by another connection (the checkpoint worker, the command line, another process) and waited for it',
    registers: [this.registry],
  });

  private readonly playerIndexPasses = new Counter({
    name: 'combo_sqlite_player_index_passes_total',
    help: 'Passes of the SQLite player index worker that indexed sessions or orders, or failed, by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly playerIndexSessions = new Counter({
    name: 'combo_sqlite_player_index_sessions_total',
    help: 'Sessions the SQLite player index worker has indexed (a player\'s sessions past them are read from the sessions table)',
    registers: [this.registry],
  });
  private readonly playerIndexOrders = new Counter({
    name: 'combo_sqlite_player_index_orders_total',
    help: 'Orders the SQLite player index worker has indexed (a player\'s orders past them are read from the orders table)',
    registers: [this.registry],
  });

  constructor(private readonly database: Database, opts: { defaultMetrics?: boolean; nodeId?: number | null } = {}) {
    this.store = new ObservabilityStore(database);
    database.checkpointer?.on('checkpoint', (pages: number) => {
      this.checkpoints.inc({ result: 'success' });
      this.checkpointedPages.inc(pages);
    });
    database.checkpointer?.on('failure', () => this.checkpoints.inc({ result: 'failure' }));
    database.onWriteLockWait?.(() => this.writeLockWaits.inc());
    database.playerIndexer?.on('indexed', (p: PlayerIndexPass) => {
      this.playerIndexPasses.inc({ result: 'success' });
      this.playerIndexSessions.inc(p.sessions.indexed);
      this.playerIndexOrders.inc(p.orders.indexed);
    });
    database.playerIndexer?.on('failure', () => this.playerIndexPasses.inc({ result: 'failure' }));
    if (opts.nodeId !== undefined && opts.nodeId !== null) this.registry.setDefaultLabels({ node_id: String(opts.nodeId) });
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.sampledGauge(
      'combo_http_admission_limit',
      'Requests that may be in progress at once: MAX_INFLIGHT_REQUESTS, or less while load shedding adapts it (ADMISSION_LATENCY_TARGET_MS)',
      (a) => a.limit(),
    );
    this.sampledGauge('combo_http_requests_in_progress', 'Requests admitted by load shedding and not yet answered', (a) => a.inProgress());
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.observe(method, route, status, seconds);
  }

  /** A request refused by load shedding (it never reaches the per-route counters). */
  shed(): void {
    this.shedTotal.inc();
  }

  refusedBeforeRouting(reason: string, status: number): void {
    this.refusedTotal.inc({ reason, status: String(status) });
  }

  /** A gauge read from the load shedder at scrape time (nothing on the request path). */
  private sampledGauge(name: string, help: string, read: (a: { limit(): number; inProgress(): number }) => number): Gauge {
    const admission = () => this.admission;
    return new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        const a = admission();
        if (a) this.set(read(a));
      },
    });
  }

  /** Where the admission gauges read from (the load shedder). */
  watchAdmission(source: { limit(): number; inProgress(): number }): void {
    this.admission = source;
  }

  /** What combo_ready reads on each scrape (the /readyz check). */
  watchReadiness(readiness: { check(): Promise<void> }): void {
    this.readiness = readiness;
  }

  rateLimited(kind: string): void {
    this.rateLimitedTotal.inc({ kind });
  }

  notificationAttempt(gameId: string, result: AttemptResult, latencyMs?: number): void {
    this.notificationAttempts.inc({ game_id: gameId, result });
    if (latencyMs !== undefined) this.notificationLatency.observe(latencyMs / 1000);
  }

  orderCreated(gameId: string): void {
    this.ordersCreated.inc(gameId);
  }

  payment(gameId: string, status: 'accepted' | 'flagged'): void {
    this.payments.inc({ game_id: gameId, status });
  }

  sessionReport(gameId: string, report: SessionReport): void {
    (report === 'enter' ? this.enterReports : this.leaveReports).inc(gameId);
  }

  nppaUpload(result: AttemptResult, events = 0): void {
    this.nppaUploads.inc({ result });
    if (events > 0) this.nppaUploadedEvents.inc({ result }, events);
  }

  /** The exposition text; reads the database gauges first (concurrent scrapes share one read). */
  async render(): Promise<string> {
    this.inflight ??= this.collectDatabase().finally(() => {
      this.inflight = null;
    });
    await this.inflight;
    return this.registry.metrics();
  }

  /** Stops the database count's thread (SQLite). */
  close(): Promise<void> {
    return this.store.close();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  private async collectDatabase(): Promise<void> {
    const stats = this.database.poolStats?.();
    if (stats) {
      this.pool.set({ state: 'total' }, stats.total);
      this.pool.set({ state: 'idle' }, stats.idle);
      this.pool.set({ state: 'waiting' }, stats.waiting);
    }
    if (this.readiness) {
      this.ready.set(
        await this.readiness.check().then(
          () => 1,
          () => 0,
        ),
      );
    }
    try {
      const b = await this.store.backlog();
      this.orders.reset();
      for (const s of ORDER_STATUSES) this.orders.set({ status: s }, 0);
      for (const r of b.ordersByStatus) this.orders.set({ status: r.status }, r.n);
      this.notificationsPending.set(b.notificationsPending);
      this.notificationsUndelivered.reset();
      for (const r of b.undeliveredByGame) this.notificationsUndelivered.set({ game_id: r.game_id, status: r.status }, r.n);
      this.nppaPending.set(b.nppaEventsPending);
      this.databaseUp.set(1);
    } catch {
      // The scrape still answers (process metrics stay useful); the gauges keep their last value.
      this.databaseUp.set(0);
    }
  }
}

/**
 * A counter's series per game, its labelled child kept once made: create-order and enter-game
 * count on every request, and finding the series from a label object hashes the labels each time.
 */
class PerGame {
  private readonly children = new Map<string, Counter.Internal>();

  constructor(
    private readonly counter: Counter<string>,
    private readonly labels: Record<string, string> = {},
  ) {}

  inc(gameId: string): void {
    let child = this.children.get(gameId);
    if (!child) {
      child = this.counter.labels({ ...this.labels, game_id: gameId });
      this.children.set(gameId, child);
    }
    child.inc();
  }
}
