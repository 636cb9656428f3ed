import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { TransactionRunner } from '../db/group-commit.js';
import type { DB, OrderEventsTable, OrderStatus, OrdersTable } from '../db/schema.js';

export type OrderRow = Selectable<OrdersTable>;
export type OrderEventRow = Selectable<OrderEventsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for orders and their state-change events. */
export class OrderStore {
  constructor(
    readonly db: Kysely<DB>,
    private readonly tx: TransactionRunner = (fn) => db.transaction().execute(fn),
  ) {}

  /** A transaction that has committed when the promise settles (group commit on SQLite). */
  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return this.tx(fn);
  }

  findByReference(q: Q, gameId: string, referenceId: string): Promise<OrderRow | undefined> {
    return q.selectFrom('orders').selectAll().where('game_id', '=', gameId).where('reference_id', '=', referenceId).executeTakeFirst();
  }

  findById(q: Q, orderId: string): Promise<OrderRow | undefined> {
    return q.selectFrom('orders').selectAll().where('order_id', '=', orderId).executeTakeFirst();
  }

  async insert(q: Q, row: OrderRow): Promise<void> {
    await q.insertInto('orders').values(row).execute();
  }

  /**
   * The guarded update of every state change: applies only while the order is still in
   * `status`, and returns the updated row, or undefined when another writer got there first.
   */
  updateIfStatus(q: Q, orderId: string, status: OrderStatus, patch: Updateable<OrdersTable>): Promise<OrderRow | undefined> {
    return q
      .updateTable('orders')
      .set(patch)
      .where('order_id', '=', orderId)
      .where('status', '=', status)
      .returningAll()
      .executeTakeFirst();
  }

  async insertEvent(q: Q, row: OrderEventRow): Promise<void> {
    await q.insertInto('order_events').values(row).execute();
  }

  /** Ids of `created` orders whose expiry has passed, oldest expiry first. */
  async findExpiredIds(q: Q, now: number, limit: number): Promise<string[]> {
    const rows = await q
      .selectFrom('orders')
      .select('order_id')
      .where('status', '=', 'created')
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.order_id);
  }
}

/** True when a database error is a unique-constraint violation (SQLite or PostgreSQL). */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: string })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
