import type { Kysely } from 'kysely';
import type { DB } from './schema.js';
import type { StatementRunner, TransactionRunner } from './group-commit.js';
import type { WalCheckpointer } from './checkpointer.js';
import type { PlayerIndexer } from './player-index.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  /**
   * Runs `fn` in a transaction and settles after it committed. On SQLite, transactions that
   * arrive together share one physical commit (group commit); on PostgreSQL each is its own.
   */
  transaction: TransactionRunner;
  /**
   * For a write that is one statement: a statement is atomic by itself. On SQLite it joins a
   * group commit like `transaction`; on PostgreSQL it runs without BEGIN and COMMIT, one round
   * trip instead of three.
   */
  oneStatement: StatementRunner;
  /** Cheap reachability probe for /readyz. */
  ping(): Promise<void>;
  /** The database file (SQLite on a file only). */
  sqliteFile?: string;
  /** The background WAL checkpointer (SQLite on a file, when SQLITE_CHECKPOINT_INTERVAL_MS > 0). */
  checkpointer?: WalCheckpointer;
  /**
   * SQLite: calls `listener` each time a group-commit batch finds the write lock held by another
   * connection and starts waiting for it (without holding the event loop), for /metrics.
   */
  onWriteLockWait?(listener: () => void): void;
  /**
   * SQLite on a file: starts the worker that fills the player index (db/player-index.ts), once
   * the migrations are applied; it is stopped by close().
   */
  startPlayerIndexer?(options?: { intervalMs?: number }): PlayerIndexer;
  /** The player index worker, once started. */
  readonly playerIndexer?: PlayerIndexer;
  /** Connection pool counters (PostgreSQL only), for /metrics. */
  poolStats?(): { total: number; idle: number; waiting: number };
  /** PostgreSQL: the statements that give a connection its time-outs ('' when there are none). */
  sessionTimeouts?: string;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  sqliteSynchronous?: 'NORMAL' | 'FULL';
  /** SQLite on a file: checkpoint the WAL on a worker thread this often (ms); 0 or unset: SQLite's own. */
  sqliteCheckpointIntervalMs?: number;
  poolSize?: number;
  /**
   * PostgreSQL: the server ends a statement that runs longer than this (ms), and a session whose
   * transaction stays idle this long; 0 or unset: no limit (the CLI's commands).
   */
  statementTimeoutMs?: number;
}

/**
 * What a store is given of the database, the same for every store (its constructor's first
 * argument): the query builder, the dialect, the two ways to write and, on SQLite on a file, the
 * file. A store tells the dialects apart with isPostgres, and by nothing else.
 */
export type StoreDatabase = Pick<Database, 'db' | 'dialect' | 'transaction' | 'oneStatement' | 'sqliteFile'>;

/** True on PostgreSQL, false on SQLite: the one test of the dialect for stores. */
export function isPostgres(database: Pick<StoreDatabase, 'dialect'>): boolean {
  return database.dialect === 'postgres';
}
