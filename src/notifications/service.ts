import { recordAudit, type Actor } from '../admin/audit.js';
import type { NotificationStatus } from '../db/schema.js';
import { Errors } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import { deliveryHealth } from './health.js';
import type { DeliveryHealth, ListNotificationsQuery, Notification, NotificationAttempt, NotificationDetail, NotificationPage, ShownStatus } from './schemas.js';
import { retryNow, type AttemptRow, type NotificationRow, type NotificationStore } from './store.js';
import { withoutPassword } from '../lib/url-display.js';

export interface NotificationServiceDeps {
  store: NotificationStore;
  clock: Clock;
  ids: IdGenerator;
  /** Wakes the dispatcher after a redelivery committed. */
  onRedeliver: () => void;
}

/** What an operator may redeliver one by one: anything no longer pending. */
const FINISHED: NotificationStatus[] = ['succeeded', 'failed', 'gone'];
/**
 * What "redeliver all of a game since" picks up: the ones whose retry window ran out. Not
 * `gone` ones: their receiver answered 410, asking for no more retries (PROTOCOL 5); sending
 * one again is an operator's decision, one by one.
 */
const RETRIES_EXHAUSTED: NotificationStatus[] = ['failed'];

const ID_RE = /^ntf_[0-9a-z]{13}[0-9A-Za-z]{4}$/;

/** Operator view of delivery notifications and redelivery (PROTOCOL 5, 11). */
export class NotificationService {
  constructor(private readonly d: NotificationServiceDeps) {}

  /** Newest first; the cursor is opaque to clients (the last id of the page, encoded). */
  async list(q: ListNotificationsQuery): Promise<NotificationPage> {
    const limit = q.limit ?? 50;
    const beforeId = q.cursor === undefined ? undefined : decodeCursor<string>(q.cursor, (v) => typeof v === 'string' && ID_RE.test(v));
    const rows = await this.d.store.list({ status: q.status, gameId: q.game_id, beforeId, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { data: page.map(toNotification), next_cursor: rows.length > limit && last ? encodeCursor(last.notification_id) : null };
  }

  async get(notificationId: string): Promise<NotificationDetail> {
    const { store } = this.d;
    const row = await store.find(store.db, notificationId);
    if (!row) throw Errors.notFound(`notification ${notificationId} not found`);
    const attempts = await store.attemptsOf(store.db, [notificationId]);
    return { ...toNotification(row), body: row.body, attempts: attempts.map(toAttempt) };
  }

  /** Notifications of an order with their attempts (for the order's admin view). */
  async ofOrder(orderId: string): Promise<NotificationDetail[]> {
    const { store } = this.d;
    const rows = await store.ofOrder(store.db, orderId);
    const attempts = await store.attemptsOf(store.db, rows.map((r) => r.notification_id));
    return rows.map((r) => ({
      ...toNotification(r),
      body: r.body,
      attempts: attempts.filter((a) => a.notification_id === r.notification_id).map(toAttempt),
    }));
  }

  /**
   * Pending and due now, with a fresh retry window. 409 while it is still pending, and for the
   * ship_order of a refunded order (the game would grant goods the player was refunded for).
   */
  async redeliver(notificationId: string, by: Actor): Promise<NotificationDetail> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    await store.transaction(async (trx) => {
      const row = await store.find(trx, notificationId);
      if (!row) throw Errors.notFound(`notification ${notificationId} not found`);
      // The update is guarded itself (status, refunded order); the reads only word the 409.
      const changed = await store.redeliver(trx, { notificationId, statuses: FINISHED }, now);
      if (changed === 0 && row.type === 'ship_order' && (await store.orderStatus(trx, row.order_id)) === 'refunded') {
        throw Errors.invalidState(`notification ${notificationId} is the ship_order of order ${row.order_id}, which is refunded: sent again, the game would grant goods for a refunded order`);
      }
      if (changed === 0) throw Errors.invalidState(`notification ${notificationId} is ${shownStatus(row)}: it is already being delivered (retry sends it now)`);
      await recordAudit(trx, ids, now, { by, game: row.game_id, action: 'notification.redeliver', target: notificationId, detail: { previous_status: row.status } });
    });
    this.d.onRedeliver();
    return this.get(notificationId);
  }

  /**
   * Redelivers every failed notification of a game created at or after `since`, but not the
   * ship_order of a refunded order (see redeliver).
   */
  async redeliverSince(gameId: string, since: number, by: Actor): Promise<{ count: number }> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    // Any number of notifications: on SQLite its journals must not be held in memory.
    const count = await store.transaction(async (trx) => {
      if (!(await store.gameExists(trx, gameId))) throw Errors.notFound(`game ${gameId} not found`);
      const n = await store.redeliver(trx, { gameId, createdSince: since, statuses: RETRIES_EXHAUSTED }, now);
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'notification.redeliver_all', target: gameId, detail: { since, count: n } });
      return n;
    }, { large: true });
    if (count > 0) this.d.onRedeliver();
    return { count };
  }

  /**
   * Sends a pending or failing notification now (operators.md 3): due at once, its attempts and
   * retry window unchanged. 409 once it is no longer being delivered (redeliver sends it again).
   * One a dispatcher holds is being sent already: answered as it stands.
   */
  async retry(notificationId: string, by: Actor): Promise<NotificationDetail> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    const changed = await store.transaction(async (trx) => {
      const row = await store.find(trx, notificationId);
      if (!row) throw Errors.notFound(`notification ${notificationId} not found`);
      if (row.status !== 'pending') throw Errors.invalidState(`notification ${notificationId} is ${row.status}: redeliver sends it again`);
      const n = await retryNow(trx, { notificationId }, now);
      await recordAudit(trx, ids, now, { by, game: row.game_id, action: 'notification.retry', target: notificationId, detail: { status: shownStatus(row), sent_now: n === 1 } });
      return n;
    });
    if (changed > 0) this.d.onRedeliver();
    return this.get(notificationId);
  }

  /** Sends every failing notification of a game now (see retry). */
  async retryFailing(gameId: string, by: Actor): Promise<{ count: number }> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    const count = await store.transaction(async (trx) => {
      if (!(await store.gameExists(trx, gameId))) throw Errors.notFound(`game ${gameId} not found`);
      const n = await retryNow(trx, { gameId }, now);
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'notification.retry_all', target: gameId, detail: { count: n } });
      return n;
    }, { large: true });
    if (count > 0) this.d.onRedeliver();
    return { count };
  }

  /** Per notify host of a game: attempts, success rate, last error, backlog (operators.md 3). */
  async health(gameId: string): Promise<DeliveryHealth> {
    const { store, clock } = this.d;
    if (!(await store.gameExists(store.db, gameId))) throw Errors.notFound(`game ${gameId} not found`);
    const now = clock.now();
    return { game_id: gameId, at: now, hosts: await deliveryHealth(store.db, gameId, now) };
  }
}

/** The status the API shows: a pending one whose latest attempt failed is `failing`. */
export function shownStatus(r: Pick<NotificationRow, 'status' | 'attempts'>): ShownStatus {
  return r.status === 'pending' && r.attempts > 0 ? 'failing' : r.status;
}

export function toNotification(r: NotificationRow): Notification {
  return {
    notification_id: r.notification_id,
    order_id: r.order_id,
    game_id: r.game_id,
    notification_type: r.type,
    notify_url: withoutPassword(r.notify_url),
    status: shownStatus(r),
    attempt_count: r.attempts,
    next_attempt_at: r.status === 'pending' ? r.next_attempt_at : null,
    last_error: r.last_error,
    window_started_at: r.window_started_at ?? r.created_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
    delivered_at: r.delivered_at,
  };
}

function toAttempt(a: AttemptRow): NotificationAttempt {
  return {
    attempt_id: a.attempt_id,
    at: a.at,
    status_code: a.status_code,
    latency_ms: a.latency_ms,
    error: a.error,
    response_snippet: a.response_snippet,
  };
}
