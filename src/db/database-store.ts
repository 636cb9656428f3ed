import type { Kysely, Transaction } from 'kysely';
import type { DB } from './schema.js';
import type { TransactionOptions } from './group-commit.js';
import { isPostgres, type StoreDatabase } from './database.js';

/**
 * What every store has of its database: constructed with the StoreDatabase (the same first
 * argument for all), it offers the query builder, transactions, one-statement writes and which
 * dialect it runs on.
 */
export class DatabaseStore {
  readonly db: Kysely<DB>;

  constructor(protected readonly database: StoreDatabase) {
    this.db = database.db;
  }

  /** A transaction that has committed when the promise settles (group commit on SQLite). */
  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>, options?: TransactionOptions): Promise<T> {
    return this.database.transaction(fn, options);
  }

  /**
   * A write of one statement, atomic and committed when the promise settles: on SQLite it joins
   * the group commit's batch; on PostgreSQL it runs without BEGIN and COMMIT (db/database.ts).
   */
  oneStatement<T>(fn: (q: Kysely<DB> | Transaction<DB>) => Promise<T>): Promise<T> {
    return this.database.oneStatement(fn);
  }

  /** True on PostgreSQL, false on SQLite. */
  protected get postgres(): boolean {
    return isPostgres(this.database);
  }
}
