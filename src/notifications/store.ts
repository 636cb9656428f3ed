import { type Expression, type ExpressionBuilder, type Kysely, type QueryCreator, type Selectable, type SqlBool, type Transaction } from 'kysely';
import type { TransactionOptions, TransactionRunner } from '../db/group-commit.js';
import type { Dialect } from '../db/index.js';
import { inIndexOrder } from '../db/planner.js';
import type { DB, NotificationAttemptsTable, NotificationsTable, NotificationStatus, OrderStatus } from '../db/schema.js';

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

/** Order `paid` -> `delivered` once its ship_order was acknowledged (PROTOCOL 6). */
export interface OrderDelivery {
  orderId: string;
  eventId: string;
  notificationId: string;
}

export interface ListFilter {
  status?: NotificationStatus;
  gameId?: string;
  /** Only ids older than this one (cursor paging, newest first). */
  beforeId?: string;
  limit: number;
}

/** Queries for notifications and their attempts. */
export class NotificationStore {
  constructor(
    readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
    private readonly tx: TransactionRunner = (fn) => db.transaction().execute(fn),
  ) {}

  /** A transaction that has committed when the promise settles (group commit on SQLite). */
  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.tx(fn, options);
  }

  /**
   * Claims up to `limit` due notifications for one delivery attempt: one guarded UPDATE sets
   * the lease (locked_until/locked_by), so two dispatchers (processes) never claim the same
   * row; on PostgreSQL the candidate rows are also picked with FOR UPDATE SKIP LOCKED so
   * concurrent claimers do not queue behind each other. A lease that runs out (the claimer
   * crashed) makes the row claimable again. A refund waits while its order's ship_order is
   * still pending (PROTOCOL 5).
   */
  async claimDue(now: number, limit: number, lockedUntil: number, token: string): Promise<NotificationRow[]> {
    // One statement on both databases (one round trip on PostgreSQL, where the dispatcher
    // claims each time a slot frees up). The ids are picked in a MATERIALIZED CTE, evaluated
    // once: inside a plain UPDATE ... IN (SELECT ... LIMIT n SKIP LOCKED) PostgreSQL's planner
    // may rescan the subquery and lease more than n rows. There they are also locked, skipping
    // rows another claimer holds; SQLite runs one writer at a time.
    return this.db
      .with(
        (cte) => cte('due').materialized(),
        (w) => (this.dialect === 'postgres' ? this.dueIds(w, now, limit).forUpdate('n').skipLocked() : this.dueIds(w, now, limit)),
      )
      .updateTable('notifications')
      .set({ locked_until: lockedUntil, locked_by: token })
      .where('notification_id', 'in', (eb) => eb.selectFrom('due').select('due.notification_id'))
      // The guarded lease: only rows still pending, due and unlocked are taken.
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where('locked_until', '<', now)
      .returningAll()
      .execute();
  }

  /** Due notifications, oldest due first; a refund waits while its ship_order is pending. */
  private dueIds(q: QueryCreator<DB>, now: number, limit: number) {
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

  /** Gives a claimed row back, due again at `dueAt` (no attempt made: its host was busy). */
  async defer(notificationId: string, token: string, dueAt: number): Promise<void> {
    await this.db
      .updateTable('notifications')
      .set({ locked_until: 0, locked_by: null, next_attempt_at: dueAt })
      .where('notification_id', '=', notificationId)
      .where('locked_by', '=', token)
      .where('status', '=', 'pending')
      .execute();
  }

  /**
   * Records an attempt and the notification's new state in one transaction, and for an
   * acknowledged ship_order moves the order to `delivered` in the same transaction. The state
   * update is guarded by the lease: a dispatcher whose lease was taken over (it stalled past
   * locked_until) still records its attempt but changes nothing else. Returns whether the
   * state was applied.
   *
   * When a ship_order settles (succeeded, failed or gone), its order's pending refund, which
   * could not be attempted before (PROTOCOL 5), gets its retry window from now, in the same
   * transaction: the time it spent waiting does not count against its window.
   */
  recordAttempt(n: AttemptBy, attempt: AttemptRow, outcome: AttemptOutcome, delivery: OrderDelivery | null): Promise<boolean> {
    const unblocked = n.shipOrderOf !== undefined && outcome.status !== 'pending' ? n.shipOrderOf : null;
    if (this.dialect === 'postgres') return this.recordAttemptAtOnce(n, attempt, outcome, delivery, unblocked);
    return this.transaction(async (trx) => {
      await trx.insertInto('notification_attempts').values(attempt).execute();
      const r = await settle(trx, n, outcome).executeTakeFirst();
      if (Number(r.numUpdatedRows) !== 1) return false;
      if (delivery) await markDelivered(trx, delivery, n.now);
      if (unblocked !== null) await openRefundWindow(trx, unblocked, n.now).execute();
      return true;
    });
  }

  /**
   * recordAttempt on PostgreSQL: the same writes as one statement (data-modifying WITH), so
   * without BEGIN and COMMIT: one round trip instead of six. The order is delivered, and its
   * refund's window opened, only when the guarded update applied (`exists (select from u)`).
   */
  private async recordAttemptAtOnce(
    n: AttemptBy,
    attempt: AttemptRow,
    outcome: AttemptOutcome,
    delivery: OrderDelivery | null,
    unblocked: string | null,
  ): Promise<boolean> {
    const settled = this.db
      .with('u', (w) => settle(w, n, outcome).returning('notification_id'))
      .with('a', (w) => w.insertInto('notification_attempts').values(attempt).returning('attempt_id'));
    // The refund's CTE only when a ship_order settles (most records are not that). No later
    // part of the statement reads it, so its table type is not carried on.
    const base =
      unblocked === null
        ? settled
        : (settled.with('r', (w) =>
            // openRefundWindow, guarded by the lease like 'd' below.
            w
              .updateTable('notifications')
              .set({ window_started_at: n.now, updated_at: n.now })
              .where('order_id', '=', unblocked)
              .where('type', '=', 'refund')
              .where('status', '=', 'pending')
              .where((eb) => eb.exists(eb.selectFrom('u').select('u.notification_id')))
              .returning('notification_id'),
          ) as unknown as typeof settled);
    if (!delivery) return (await base.selectFrom('u').select('notification_id').execute()).length === 1;
    const rows = await base
      .with('d', (w) =>
        w
          .updateTable('orders')
          .set({ status: 'delivered', delivered_at: n.now, updated_at: n.now })
          .where('order_id', '=', delivery.orderId)
          .where('status', '=', 'paid')
          .where((eb) => eb.exists(eb.selectFrom('u').select('u.notification_id')))
          .returning(['order_id', 'delivered_at']),
      )
      .with('e', (w) =>
        w
          .insertInto('order_events')
          .columns(['event_id', 'order_id', 'from_status', 'to_status', 'at', 'detail'])
          .expression((eb) =>
            eb
              .selectFrom('d')
              .select((s) => [
                s.val(delivery.eventId).as('event_id'),
                'd.order_id',
                s.val('paid').as('from_status'),
                s.val('delivered').as('to_status'),
                'd.delivered_at',
                s.val(JSON.stringify({ notification_id: delivery.notificationId })).as('detail'),
              ]),
          )
          .returning('event_id'),
      )
      .selectFrom('u')
      .select('notification_id')
      .execute();
    return rows.length === 1;
  }

  find(q: Q, notificationId: string): Promise<NotificationRow | undefined> {
    return q.selectFrom('notifications').selectAll().where('notification_id', '=', notificationId).executeTakeFirst();
  }

  list(f: ListFilter): Promise<NotificationRow[]> {
    // A game's notifications by status: read in order from (game_id, status, notification_id).
    if (f.gameId !== undefined && f.status !== undefined) return inIndexOrder(this.db, (db) => this.listIn(db, f));
    return this.listIn(this.db, f);
  }

  private listIn(db: Kysely<DB> | Transaction<DB>, f: ListFilter): Promise<NotificationRow[]> {
    let q = db.selectFrom('notifications').selectAll();
    if (f.gameId !== undefined) q = q.where('game_id', '=', f.gameId);
    if (f.status !== undefined) q = q.where('status', '=', f.status);
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
    if (this.dialect === 'postgres') {
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

/** The notification's new state, guarded by the lease: changes nothing when the lease was lost. */
function settle(q: QueryCreator<DB>, n: AttemptBy, outcome: AttemptOutcome) {
  return q
    .updateTable('notifications')
    .set({ ...outcome, locked_until: 0, locked_by: null, updated_at: n.now })
    .where('notification_id', '=', n.notificationId)
    .where('locked_by', '=', n.token)
    .where('status', '=', 'pending');
}

/** The retry window of an order's pending refund starts `now` (its ship_order just settled). */
function openRefundWindow(q: QueryCreator<DB>, orderId: string, now: number) {
  return q
    .updateTable('notifications')
    .set({ window_started_at: now, updated_at: now })
    .where('order_id', '=', orderId)
    .where('type', '=', 'refund')
    .where('status', '=', 'pending');
}

/** Guarded `paid` -> `delivered`: a refunded (or already delivered) order is left alone. */
async function markDelivered(trx: Transaction<DB>, d: OrderDelivery, now: number): Promise<void> {
  const r = await trx
    .updateTable('orders')
    .set({ status: 'delivered', delivered_at: now, updated_at: now })
    .where('order_id', '=', d.orderId)
    .where('status', '=', 'paid')
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) !== 1) return;
  await trx
    .insertInto('order_events')
    .values({ event_id: d.eventId, order_id: d.orderId, from_status: 'paid', to_status: 'delivered', at: now, detail: JSON.stringify({ notification_id: d.notificationId }) })
    .execute();
}
