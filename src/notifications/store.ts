import { type Expression, type ExpressionBuilder, type Kysely, type QueryCreator, type Selectable, type SqlBool, type Transaction } from 'kysely';
import { isPostgres, type StoreDatabase } from '../db/database.js';
import { DatabaseStore } from '../db/database-store.js';
import { inIndexOrder } from '../db/planner.js';
import { prepareNamed } from '../db/prepared.js';
import type { DB, NotificationAttemptsTable, NotificationsTable, NotificationStatus, OrderStatus } from '../db/schema.js';
import { IdGenerator } from '../lib/ids.js';
import { OrderLifecycle } from '../orders/lifecycle.js';
import { OrderStore } from '../orders/store.js';
import type { ShownStatus } from './schemas.js';

export type NotificationRow = Selectable<NotificationsTable>;
export type AttemptRow = Selectable<NotificationAttemptsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** The notification's state after an attempt (the lock is always released with it). */
export interface AttemptOutcome {
  status: NotificationStatus;
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  delivered_at: number | null;
}

/** Whose attempt is recorded: the notification, the lease it was claimed under, and when. */
export interface AttemptBy {
  notificationId: string;
  token: string;
  now: number;
  /** For a ship_order, its order: a refund of that order waits for the ship_order to settle. */
  shipOrderOf?: string;
}

/** The order a ship_order's acknowledgement delivers (PROTOCOL 6), and its event's id. */
export interface OrderDelivery {
  orderId: string;
  eventId: string;
  notificationId: string;
}

export interface ListFilter {
  /** As the API shows it: `failing` is a stored `pending` one with attempts (schemas.ts). */
  status?: ShownStatus;
  gameId?: string;
  /** Only ids older than this one (cursor paging, newest first). */
  beforeId?: string;
  limit: number;
}

/** What a delivered ship_order does to its order: the orders domain's transition (OrderLifecycle). */
export interface Deliverer {
  markDelivered(trx: Transaction<DB>, d: OrderDelivery, now: number): Promise<boolean>;
}

/** One attempt to record (see recordAttempt). */
interface Pending {
  by: AttemptBy;
  attempt: AttemptRow;
  outcome: AttemptOutcome;
  delivery: OrderDelivery | null;
  resolve: (applied: boolean) => void;
  reject: (e: unknown) => void;
}

/** At most this many attempts are recorded in one transaction. */
const MAX_RECORD_BATCH = 256;

const CLAIM = ['now', 'limit', 'lockedUntil', 'token'] as const;
const SETTLE = ['notificationId', 'token', 'now', 'status', 'attempts', 'nextAttemptAt', 'lastError', 'deliveredAt'] as const;
const ATTEMPT = ['attempt_id', 'notification_id', 'at', 'status_code', 'latency_ms', 'error', 'response_snippet'] as const;

/** Queries for notifications and their attempts. */
export class NotificationStore extends DatabaseStore {
  private readonly claimDueIds;
  private readonly settleRow;
  private readonly insertAttempt;
  private readonly refundWindow;
  private readonly deferRow;
  /** Attempts waiting for the transaction in progress to commit (recordAttempt). */
  private pending: Pending[] = [];
  private recording = false;

  /**
   * @param orders moves a delivered ship_order's order to `delivered` (the orders domain owns
   *   every order state change); by default an OrderLifecycle over the same database.
   */
  constructor(
    database: StoreDatabase,
    private readonly orders: Deliverer = new OrderLifecycle({ store: new OrderStore(database), ids: new IdGenerator() }),
  ) {
    super(database);
    const db = database.db;
    const postgres = isPostgres(database);
    // The delivery path runs these for every notification: compiled once (db/prepared.ts).
    this.claimDueIds = prepareNamed(db, CLAIM, (d, p) => {
      const claim = d
        .with(
          (cte) => cte('due').materialized(),
          (w) => (postgres ? dueIds(w, p.now, p.limit).forUpdate('n').skipLocked() : dueIds(w, p.now, p.limit)),
        )
        .updateTable('notifications')
        // Leased rows leave the due range (next_attempt_at moves to the lease's end), so a claim
        // reads only rows it can take; the lease running out makes the row due again.
        .set({ locked_until: p.lockedUntil, locked_by: p.token, next_attempt_at: p.lockedUntil })
        .where('notification_id', 'in', (eb) => eb.selectFrom('due').select('due.notification_id'))
        .returningAll();
      // The guarded lease on PostgreSQL: only rows still pending, due and unlocked are taken
      // (another claimer may have changed one since this statement's snapshot). SQLite runs
      // the statement alone, so what `due` picked is still so; there the guard would only make
      // it read every due row (the planner takes the due index for it, not the ids).
      return postgres
        ? claim.where('status', '=', 'pending').where('next_attempt_at', '<=', p.now).where('locked_until', '<', p.now)
        : claim;
    });
    this.settleRow = prepareNamed(db, SETTLE, (d, p) =>
      d
        .updateTable('notifications')
        .set({ status: p.status, attempts: p.attempts, next_attempt_at: p.nextAttemptAt, last_error: p.lastError, delivered_at: p.deliveredAt, locked_until: 0, locked_by: null, updated_at: p.now })
        .where('notification_id', '=', p.notificationId)
        .where('locked_by', '=', p.token)
        .where('status', '=', 'pending'),
    );
    this.insertAttempt = prepareNamed(db, ATTEMPT, (d, p) => d.insertInto('notification_attempts').values(p));
    this.refundWindow = prepareNamed(db, ['orderId', 'now'], (d, p) =>
      d.updateTable('notifications').set({ window_started_at: p.now, updated_at: p.now }).where('order_id', '=', p.orderId).where('type', '=', 'refund').where('status', '=', 'pending'),
    );
    this.deferRow = prepareNamed(db, ['notificationId', 'token', 'dueAt'], (d, p) =>
      d
        .updateTable('notifications')
        .set({ locked_until: 0, locked_by: null, next_attempt_at: p.dueAt })
        .where('notification_id', '=', p.notificationId)
        .where('locked_by', '=', p.token)
        .where('status', '=', 'pending'),
    );
  }

  /**
   * Claims up to `limit` due notifications for one delivery attempt: one guarded UPDATE sets
   * the lease (locked_until/locked_by), so two dispatchers (processes) never claim the same
   * row; on PostgreSQL the candidate rows are also picked with FOR UPDATE SKIP LOCKED so
   * concurrent claimers do not queue behind each other. A lease that runs out (the claimer
   * crashed) makes the row claimable again. A refund waits while its order's ship_order is
   * still pending (PROTOCOL 5).
   *
   * The ids are picked in a MATERIALIZED CTE, evaluated once: inside a plain UPDATE ... IN
   * (SELECT ... LIMIT n SKIP LOCKED) PostgreSQL's planner may rescan the subquery and lease
   * more than n rows. There they are also locked, skipping rows another claimer holds; SQLite
   * runs one writer at a time.
   */
  async claimDue(now: number, limit: number, lockedUntil: number, token: string): Promise<NotificationRow[]> {
    const r = await this.oneStatement((q) => this.claimDueIds(q, { now, limit, lockedUntil, token }));
    return r.rows as NotificationRow[];
  }

  /** Gives a claimed row back, due again at `dueAt` (no attempt made: its host was busy). */
  async defer(notificationId: string, token: string, dueAt: number): Promise<void> {
    await this.oneStatement((q) => this.deferRow(q, { notificationId, token, dueAt }));
  }

  /**
   * Records an attempt and the notification's new state in one transaction, and for an
   * acknowledged ship_order moves the order to `delivered` (through the orders domain) in the
   * same transaction. The state update is guarded by the lease: a dispatcher whose lease was
   * taken over (it stalled past locked_until) still records its attempt but changes nothing
   * else. Resolves to whether the state was applied, once committed.
   *
   * When a ship_order settles (succeeded, failed or gone), its order's pending refund, which
   * could not be attempted before (PROTOCOL 5), gets its retry window from now, in the same
   * transaction: the time it spent waiting does not count against its window.
   *
   * Attempts recorded while a transaction of them is in progress wait for it and then go
   * together in the next one (one commit for many). Should that transaction fail, each is
   * recorded again alone, so that one attempt the database refuses fails no other.
   */
  recordAttempt(by: AttemptBy, attempt: AttemptRow, outcome: AttemptOutcome, delivery: OrderDelivery | null): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.pending.push({ by, attempt, outcome, delivery, resolve, reject });
      if (!this.recording) void this.recordPending();
    });
  }

  private async recordPending(): Promise<void> {
    this.recording = true;
    try {
      while (this.pending.length) {
        const batch = this.pending.splice(0, MAX_RECORD_BATCH);
        try {
          const applied = await this.transaction((trx) => this.recordAll(trx, batch));
          batch.forEach((p, i) => p.resolve(applied[i] as boolean));
        } catch (e) {
          if (batch.length === 1) (batch[0] as Pending).reject(e);
          else await Promise.all(batch.map((p) => this.transaction((trx) => this.recordAll(trx, [p])).then(([a]) => p.resolve(a as boolean), p.reject)));
        }
      }
    } finally {
      this.recording = false;
    }
  }

  /** The writes of recordAttempt for each of `batch`, in one transaction; whether each applied. */
  private async recordAll(trx: Transaction<DB>, batch: Pending[]): Promise<boolean[]> {
    const applied: boolean[] = [];
    for (const { by, attempt, outcome, delivery } of batch) {
      await this.insertAttempt(trx, attempt);
      const o = outcome;
      const r = await this.settleRow(trx, {
        notificationId: by.notificationId,
        token: by.token,
        now: by.now,
        status: o.status,
        attempts: o.attempts,
        nextAttemptAt: o.next_attempt_at,
        lastError: o.last_error,
        deliveredAt: o.delivered_at,
      });
      const ok = Number(r.numAffectedRows ?? 0) === 1;
      applied.push(ok);
      if (!ok) continue;
      // An order that was still `paid` has no refund: only a refunded one can have one waiting.
      const delivered = delivery !== null && (await this.orders.markDelivered(trx, delivery, by.now));
      if (by.shipOrderOf !== undefined && o.status !== 'pending' && !delivered) await this.refundWindow(trx, { orderId: by.shipOrderOf, now: by.now });
    }
    return applied;
  }

  find(q: Q, notificationId: string): Promise<NotificationRow | undefined> {
    return q.selectFrom('notifications').selectAll().where('notification_id', '=', notificationId).executeTakeFirst();
  }

  list(f: ListFilter): Promise<NotificationRow[]> {
    // A game's notifications by status: read in order from (game_id, status, notification_id).
    if (f.gameId !== undefined && f.status !== undefined) return inIndexOrder(this.postgres, this.db, (db) => this.listIn(db, f));
    return this.listIn(this.db, f);
  }

  private listIn(db: Kysely<DB> | Transaction<DB>, f: ListFilter): Promise<NotificationRow[]> {
    let q = db.selectFrom('notifications').selectAll();
    if (f.gameId !== undefined) q = q.where('game_id', '=', f.gameId);
    if (f.status === 'pending' || f.status === 'failing') {
      q = q.where('status', '=', 'pending').where('attempts', f.status === 'failing' ? '>' : '=', 0);
    } else if (f.status !== undefined) {
      q = q.where('status', '=', f.status);
    }
    if (f.beforeId !== undefined) q = q.where('notification_id', '<', f.beforeId);
    return q.orderBy('notification_id', 'desc').limit(f.limit).execute();
  }

  /** Attempts of some notifications, oldest first. */
  attemptsOf(q: Q, notificationIds: string[]): Promise<AttemptRow[]> {
    if (notificationIds.length === 0) return Promise.resolve([]);
    return q
      .selectFrom('notification_attempts')
      .selectAll()
      .where('notification_id', 'in', notificationIds)
      .orderBy('at')
      .orderBy('attempt_id')
      .execute();
  }

  /** Notifications of one order, oldest first (for the order's admin view). */
  ofOrder(q: Q, orderId: string): Promise<NotificationRow[]> {
    return q.selectFrom('notifications').selectAll().where('order_id', '=', orderId).orderBy('created_at').orderBy('notification_id').execute();
  }

  async orderStatus(q: Q, orderId: string): Promise<OrderStatus | undefined> {
    return (await q.selectFrom('orders').select('status').where('order_id', '=', orderId).executeTakeFirst())?.status;
  }

  async gameExists(q: Q, gameId: string): Promise<boolean> {
    return (await q.selectFrom('games').select('game_id').where('game_id', '=', gameId).executeTakeFirst()) !== undefined;
  }

  /**
   * Makes notifications pending and due now with a fresh retry window, guarded by their
   * current status (a pending one is left alone) and by their order: a ship_order of a
   * refunded order is left alone, since the game would grant goods the player was refunded
   * for (its refund may already be delivered). Returns how many changed.
   */
  async redeliver(
    q: Q,
    where: { notificationId?: string; gameId?: string; createdSince?: number; statuses: NotificationStatus[] },
    now: number,
  ): Promise<number> {
    // PostgreSQL (read committed): the guard below reads the order as of the statement's start,
    // and a refund committing meanwhile conflicts with no notification row, so the ship_order
    // would go out again after the refund. Locking the orders first waits for such a refund
    // (the guard then sees it), or makes a later refund wait until this is committed (its
    // refund is then held behind the pending ship_order). SQLite has one writer at a time.
    if (this.postgres) {
      await q
        .selectFrom('orders')
        .select('orders.order_id')
        .where('orders.order_id', 'in', (eb) =>
          eb.selectFrom('notifications').select('notifications.order_id').where('type', '=', 'ship_order').where('status', 'in', where.statuses).where(redelivered(where)),
        )
        .forShare()
        .execute();
    }
    const u = q
      .updateTable('notifications')
      .set({
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        window_started_at: now,
        locked_until: 0,
        locked_by: null,
        delivered_at: null,
        updated_at: now,
      })
      .where('status', 'in', where.statuses)
      .where((eb) =>
        eb.or([
          eb('type', '=', 'refund'),
          eb.not(
            eb.exists(
              eb
                .selectFrom('orders')
                .select('orders.order_id')
                .whereRef('orders.order_id', '=', 'notifications.order_id')
                .where('orders.status', '=', 'refunded'),
            ),
          ),
        ]),
      );
    const r = await u.where(redelivered(where)).executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
}

/**
 * Makes pending notifications due now ("retry now", operators.md 3): one, or a game's failing
 * ones. Their attempts and retry window stay as they are. Rows leased by a dispatcher are left
 * alone: they are being sent. Returns how many changed.
 */
export async function retryNow(q: Q, where: { notificationId: string } | { gameId: string }, now: number): Promise<number> {
  let u = q
    .updateTable('notifications')
    .set({ next_attempt_at: now, updated_at: now })
    .where('status', '=', 'pending')
    .where('locked_until', '<', now);
  u = 'notificationId' in where ? u.where('notification_id', '=', where.notificationId) : u.where('game_id', '=', where.gameId).where('attempts', '>', 0);
  const r = await u.executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Due notifications, oldest due first; a refund waits while its ship_order is pending. */
function dueIds(q: QueryCreator<DB>, now: number, limit: number) {
  return q
    .selectFrom('notifications as n')
    .select('n.notification_id')
    .where('n.status', '=', 'pending')
    .where('n.next_attempt_at', '<=', now)
    .where('n.locked_until', '<', now)
    .where((eb) =>
      eb.or([
        eb('n.type', '=', 'ship_order'),
        eb.not(
          eb.exists(
            eb
              .selectFrom('notifications as s')
              .select('s.notification_id')
              .whereRef('s.order_id', '=', 'n.order_id')
              .where('s.type', '=', 'ship_order')
              .where('s.status', '=', 'pending'),
          ),
        ),
      ]),
    )
    .orderBy('n.next_attempt_at')
    .limit(limit);
}

/** The notifications a redeliver is about: one, or a game's since a time. */
function redelivered(where: { notificationId?: string; gameId?: string; createdSince?: number }) {
  return (eb: ExpressionBuilder<DB, 'notifications'>) => {
    const all: Expression<SqlBool>[] = [];
    if (where.notificationId !== undefined) all.push(eb('notifications.notification_id', '=', where.notificationId));
    if (where.gameId !== undefined) all.push(eb('notifications.game_id', '=', where.gameId));
    if (where.createdSince !== undefined) all.push(eb('notifications.created_at', '>=', where.createdSince));
    return eb.and(all);
  };
}
