import type { Kysely, Selectable, Transaction } from 'kysely';
import type { TransactionRunner } from '../db/group-commit.js';
import type { DB, OrdersTable } from '../db/schema.js';

export type OrderRow = Selectable<OrdersTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for orders. */
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
}

/** True when a database error is a unique-constraint violation (SQLite or PostgreSQL). */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: string })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
