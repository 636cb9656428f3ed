import type { Expression, Kysely, Selectable, Transaction } from 'kysely';
import type { DB, NotificationAttemptsTable, NotificationsTable, OrderStatus, PaymentsTable } from '../db/schema.js';
import { acrossGames } from '../db/per-game.js';
import { inIndexOrder } from '../db/planner.js';
import { playerOrdersSqlite } from './player-orders-sqlite.js';
import { DatabaseStore } from '../db/database-store.js';
import type { OrderEventRow, OrderRow } from './store.js';

export interface OrderFilter {
  gameId?: string;
  status?: OrderStatus;
  comboId?: string;
  referenceId?: string;
}

/** Position after the last row of a page: newest first by (created_at, order_id). */
export interface OrderCursor {
  createdAt: number;
  orderId: string;
}

export type NotificationRow = Selectable<NotificationsTable>;
export type AttemptRow = Selectable<NotificationAttemptsTable>;

/** Read-only queries of the operator order views, across orders, payments and notifications. */
export class OrderAdminStore extends DatabaseStore {
  /**
   * Newest first by (created_at, order_id). With a game, one index range read in order. Without
   * one, every game's newest matching rows are read through a per-game index ((game_id,
   * created_at, order_id), (game_id, status, created_at, order_id), (game_id, combo_id,
   * created_at, order_id) (on SQLite, in the player index), (game_id, reference_id)) and merged, in one statement however many
   * games there are (db/per-game.ts): a rare status or an unknown player then reads no more than
   * a page per game, where one read of the table scanned all of it (seconds at 10 million rows;
   * docs/benchmarks.md, "Scale"). No index orders every game's orders by time alone: each new
   * order would write one more B-tree.
   */
  async list(filter: OrderFilter, after: OrderCursor | null, limit: number): Promise<OrderRow[]> {
    // SQLite keeps the player key (game_id, combo_id, created_at, order_id) in the player index
    // beside the database (db/player-index.ts); a reference is still one index read.
    if (!this.postgres && filter.comboId !== undefined && filter.referenceId === undefined) {
      return playerOrdersSqlite(this.db, { ...filter, comboId: filter.comboId, after, limit });
    }
    return filter.status !== undefined && filter.comboId === undefined && filter.referenceId === undefined
      ? inIndexOrder(this.postgres, this.db, (db) => this.listIn(db, filter, after, limit))
      : this.listIn(this.db, filter, after, limit);
  }

  private listIn(db: Kysely<DB> | Transaction<DB>, filter: OrderFilter, after: OrderCursor | null, limit: number): Promise<OrderRow[]> {
    const query = (gameId: string | Expression<string> | undefined) => {
      let q = db.selectFrom('orders').selectAll();
      if (gameId !== undefined) q = q.where('game_id', '=', gameId);
      if (filter.status !== undefined) q = q.where('status', '=', filter.status);
      if (filter.comboId !== undefined) q = q.where('combo_id', '=', filter.comboId);
      if (filter.referenceId !== undefined) q = q.where('reference_id', '=', filter.referenceId);
      if (after) {
        // `created_at <=` first: a range the index can seek to (an OR alone is a filter, and a
        // cursor deep into 10 million rows then scanned everything newer than it).
        q = q
          .where('created_at', '<=', after.createdAt)
          .where((eb) => eb.or([eb('created_at', '<', after.createdAt), eb('order_id', '<', after.orderId)]));
      }
      return q.orderBy('created_at', 'desc').orderBy('order_id', 'desc').limit(limit);
    };
    if (filter.gameId !== undefined) return query(filter.gameId).execute();
    return acrossGames(this.postgres, db, 'orders', query, (m) => m.orderBy('created_at', 'desc').orderBy('order_id', 'desc').limit(limit));
  }

  events(orderId: string): Promise<OrderEventRow[]> {
    return this.db.selectFrom('order_events').selectAll().where('order_id', '=', orderId).orderBy('at').orderBy('event_id').execute();
  }

  payments(orderId: string): Promise<Selectable<PaymentsTable>[]> {
    return this.db.selectFrom('payments').selectAll().where('order_id', '=', orderId).orderBy('created_at').orderBy('payment_id').execute();
  }

  /** The order's notifications, oldest first, each with its delivery attempts in time order. */
  async notifications(orderId: string): Promise<{ notification: NotificationRow; attempts: AttemptRow[] }[]> {
    const ntfs = await this.db
      .selectFrom('notifications')
      .selectAll()
      .where('order_id', '=', orderId)
      .orderBy('created_at')
      .orderBy('notification_id')
      .execute();
    if (ntfs.length === 0) return [];
    const attempts = await this.db
      .selectFrom('notification_attempts')
      .selectAll()
      .where(
        'notification_id',
        'in',
        ntfs.map((n) => n.notification_id),
      )
      .orderBy('at')
      .orderBy('attempt_id')
      .execute();
    return ntfs.map((n) => ({ notification: n, attempts: attempts.filter((a) => a.notification_id === n.notification_id) }));
  }
}
