import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type Migration, type MigrationResultSet } from 'kysely';
import pg from 'pg';
import { DEFAULT_MIGRATION_LOCK_TIMEOUT_MS } from '../config/index.js';
import type { DB } from './schema.js';
import { migrations } from './migrations/index.js';
import { GroupCommitter, type StatementRunner, type TransactionOptions, type TransactionRunner } from './group-commit.js';
import { runDirectly } from './direct.js';
import { TurnSnapshot } from './turn-snapshot.js';
import { SAFETY_NET_PAGES, WalCheckpointer } from './checkpointer.js';
import {
  attachPlayerIndex,
  attachPlayerIndexInMemory,
  markPlayerIndexDamaged,
  onPlayerIndexDamaged,
  openPlayerIndexFile,
  PlayerIndexer,
  resetIfStale,
} from './player-index.js';

export type { TransactionOptions, TransactionRunner };

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
 * The service's type parsers, given to its pool's connections only (not set on the pg module for
 * the whole process): int8 (bigint) columns hold Unix ms and minor units, well inside Number's
 * exact range, and are read as numbers.
 */
const INT8 = 20;
export const SERVICE_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 && format !== 'binary' ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** The database cannot be opened or reached (at start): the cause's message says why. */
export class DatabaseUnusableError extends Error {
  constructor(cause: unknown) {
    const e = cause as { message?: string; code?: string } | null;
    super(e?.message || e?.code || String(cause), { cause });
    this.name = 'DatabaseUnusableError';
  }
}

export function openDatabase(url: string, options: DatabaseOptions = {}): Database {
  try {
    if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options);
    return openPostgres(url, options);
  } catch (e) {
    // Its directory cannot be made, its file cannot be opened: nothing else has started yet.
    throw new DatabaseUnusableError(e);
  }
}

function openSqlite(file: string, options: DatabaseOptions): Database {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  const raw = new SQLite(file);
  // WAL: a committed transaction survives the process being killed. synchronous=NORMAL may
  // lose the last transactions on power loss (never corrupts); FULL fsyncs every commit.
  raw.pragma('journal_mode = WAL');
  raw.pragma(`synchronous = ${options.sqliteSynchronous ?? 'NORMAL'}`);
  raw.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  // Journals in memory: a group-commit batch runs each job in a savepoint, and the savepoint's
  // journal (the pages the job changes, ~40-60 KiB) soon outgrows SQLite's 64 KiB in-memory
  // spill limit; in a temporary file every page then costs write system calls. In memory,
  // create-order's database work is markedly cheaper (`npm run bench:sqlite-writes` measures
  // both; docs/benchmarks.md, "SQLite writes"). A batch holds little; a transaction
  // that may change many rows asks for temporary files (TransactionOptions.large), and so do
  // migrations.
  raw.pragma('temp_store = MEMORY');
  const checkpointer =
    file !== ':memory:' && options.sqliteCheckpointIntervalMs
      ? new WalCheckpointer({ file, intervalMs: options.sqliteCheckpointIntervalMs, synchronous: options.sqliteSynchronous ?? 'NORMAL' })
      : undefined;
  if (checkpointer) raw.pragma(`wal_autocheckpoint = ${SAFETY_NET_PAGES}`);
  // Hot reads outside transactions use a second, read-only connection (db/direct.ts), in one
  // read transaction per event-loop turn that every write of this process ends first
  // (db/turn-snapshot.ts). An in-memory database is private to its connection: there, reads go
  // through Kysely.
  // The sessions of a player: in a second file on SQLite, attached to the read-only connection
  // (db/player-index.ts); in memory, an empty one attached to the one connection.
  const playerIndex = file === ':memory:' ? null : openPlayerIndexFile(file);
  if (!playerIndex) attachPlayerIndexInMemory(raw);
  const reader = file === ':memory:' ? null : withStatementCache(openReader(file));
  const snapshot = reader ? new TurnSnapshot(reader) : null;
  const statements = withStatementCache(raw, snapshot ? () => snapshot.endForWrite() : undefined);
  const db = new Kysely<DB>({ dialect: new SqliteDialect({ database: statements }) });
  const committer = new GroupCommitter(db, statements);
  if (reader && snapshot) runDirectly(db, reader, true, snapshot);
  // A listing that found the file damaged: made again at the next start.
  if (playerIndex) onPlayerIndexDamaged(db, () => markPlayerIndexDamaged(playerIndex));
  let indexer: PlayerIndexer | undefined;
  return {
    db,
    dialect: 'sqlite',
    sqliteFile: file === ':memory:' ? undefined : file,
    checkpointer,
    transaction: committer.run,
    oneStatement: committer.runStatement,
    ping: async () => {
      raw.prepare('select 1').get();
    },
    startPlayerIndexer:
      file === ':memory:'
        ? undefined
        : (o) => {
            if (indexer) throw new Error('the player indexer is already running');
            // A file that no longer matches the database is emptied now, not at the worker's
            // first pass: listings read it from the first request on. Not able to tell (another
            // instance's worker holds the file past the busy time-out): the worker checks at its
            // first pass.
            let stale = false;
            try {
              stale = resetIfStale(playerIndex!, raw);
            } catch {
              // left to the worker
            }
            const started = (indexer = new PlayerIndexer({ file, intervalMs: o?.intervalMs }));
            if (stale) process.nextTick(() => started.emit('reset'));
            return started;
          },
    get playerIndexer() {
      return indexer;
    },
    close: async () => {
      await indexer?.stop();
      await checkpointer?.stop();
      snapshot?.end();
      reader?.close();
      playerIndex?.close();
      await db.destroy();
    },
  };
}

const SQLITE_BUSY_TIMEOUT_MS = 5000;

function openReader(file: string): SQLite.Database {
  const reader = new SQLite(file, { readonly: true });
  reader.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  attachPlayerIndex(reader, file);
  return reader;
}

/**
 * Kysely's SQLite driver prepares every statement on every call; preparing costs more than
 * running a simple insert. Statements are cached by SQL text (Kysely emits the same text for
 * the same query shape, with values as parameters), bounded so odd shapes cannot grow it.
 * `beforeWrite` is called whenever any statement but a plain read is handed out (a write, also
 * one with RETURNING, and transaction control, COMMIT included): every statement reaches the
 * connection through here (Kysely's driver, the group commit, db/direct.ts) and runs right after.
 */
function withStatementCache(raw: SQLite.Database, beforeWrite?: () => void) {
  const cache = new Map<string, SQLite.Statement>();
  return {
    prepare(sqlText: string) {
      let stmt = cache.get(sqlText);
      if (!stmt) {
        stmt = raw.prepare(sqlText);
        if (cache.size >= 2000) cache.clear();
        cache.set(sqlText, stmt);
      }
      if (beforeWrite && !(stmt.reader && stmt.readonly)) beforeWrite();
      return stmt;
    },
    transactionOpen: () => raw.inTransaction,
    close() {
      cache.clear();
      raw.close();
    },
  };
}

function openPostgres(url: string, options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: url,
    types: SERVICE_TYPES,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
  });
  const timeouts = options.statementTimeoutMs ? timeoutStatements(options.statementTimeoutMs) : '';
  // A client losing its connection (database restart) must not crash the process: the pool
  // reports idle clients' errors, and a client in use also emits 'error' besides failing its
  // query (the query's rejection is what the request sees: 503).
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // The time-outs, set before the connection's first query (the pool hands it out after this
    // event; a client runs its queries in order): a request waiting on a lock someone else
    // holds (an operator's ALTER TABLE, a stuck transaction) fails with 503 instead of holding
    // its pool connection, and a transaction left open cannot hold its locks forever. SET, not
    // startup parameters: PgBouncer refuses a connection that sends those.
    if (timeouts) client.query(timeouts).catch(() => {});
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    transaction: (fn, options) =>
      db.transaction().execute(async (trx) => {
        // SET LOCAL: for this transaction only, on its connection (also behind PgBouncer).
        if (options?.large && timeouts) await sql.raw(timeoutStatements(0, 'local')).execute(trx);
        return fn(trx);
      }),
    oneStatement: (fn) => fn(db),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    sessionTimeouts: timeouts,
    close: () => db.destroy(),
  };
}

export function migrator(db: Kysely<DB>, list: Record<string, Migration> = migrations): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => list },
    // Branches merged migrations with the same number (three 0002s, independent of each
    // other): a database made between those merges has a later 0002 applied and an earlier one
    // pending. Kysely refuses that by default; pending migrations still run in name order.
    allowUnorderedMigrations: true,
  });
}

export interface MigrateOptions {
  /**
   * PostgreSQL: how long one attempt waits for a lock (ms; DATABASE_MIGRATION_LOCK_TIMEOUT_MS);
   * 0: without limit. A migration's DDL queues for its table's lock behind any transaction that
   * reads the table (a long report, a `pg_dump`), and every query on that table then queues
   * behind the migration: with a limit the attempt gives up instead, the table's traffic goes
   * on, and the migration is tried again.
   */
  lockTimeoutMs?: number;
  /** How long to keep trying again after lock time-outs (ms; default 600 s). */
  lockRetryBudgetMs?: number;
  /** The wait before the first new attempt (ms; default 1 s); it doubles up to 30 s. */
  lockRetryDelayMs?: number;
  /** Told of each attempt given up on a lock, before the wait (the service logs it). */
  onLockTimeout?(attempt: LockTimeoutAttempt): void;
}

export interface LockTimeoutAttempt {
  /** The migration whose statement waited. */
  migration: string;
  attempt: number;
  retryInMs: number;
}

/**
 * Applies every pending migration (of `list`: the service's own unless a test gives others);
 * throws with the failing migration's error.
 */
export async function migrateToLatest(database: Database, list?: Record<string, Migration>, options: MigrateOptions = {}): Promise<MigrationResultSet> {
  const { db } = database;
  // A migration may rewrite a whole table: on SQLite its journals go to temporary files (see
  // openSqlite), so memory does not grow with the table.
  const sqlite = database.dialect === 'sqlite';
  if (!sqlite) {
    // PostgreSQL: Kysely runs each pending migration in a transaction, under an advisory lock.
    // A migration may rewrite a table: each one turns the statement time-out off for the rest
    // of that transaction (SET LOCAL, which PgBouncer keeps on the transaction's connection).
    const known = await migrator(db, list).getMigrations();
    if (known.every((m) => m.executedAt !== undefined)) {
      // Nothing to run, and no SET sent; but a newer release's migrations are still refused.
      const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
      const names = new Set(known.map((m) => m.name));
      const unknown = rows.find((r) => !names.has(r.name));
      if (unknown) throw newerRelease(unknown.name);
      return { results: [] };
    }
    const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS;
    const unlimited = withoutTimeouts(list ?? migrations, lockTimeoutMs);
    // Waiting for another instance's migrations (the lock) must not time out either: the session
    // of this one connection goes without, and gets the pool's time-outs back after. Behind
    // PgBouncer (transaction pooling) these session SETs may land on other server connections:
    // run upgrades' migrations through a direct connection there (docs/deployment.md).
    return db.connection().execute(async (conn) => {
      await sql.raw(timeoutStatements(0)).execute(conn);
      try {
        // One migration per transaction (Kysely's migrateUp: one step, its own transaction and
        // advisory lock): an earlier migration's table lock is released at its commit instead of
        // being held while a later one waits for its own lock or runs (0010's ANALYZE), and a lock
        // time-out rolls back and retries only the migration that waited.
        const results: NonNullable<MigrationResultSet['results']> = [];
        const started = Date.now();
        for (;;) {
          const step = await retriedAfterLockTimeouts(() => migrator(conn, unlimited).migrateUp(), lockTimeoutMs, options, started);
          if (!step.results?.length) return { results };
          results.push(...step.results);
        }
      } finally {
        await sql.raw(database.sessionTimeouts || 'reset statement_timeout; reset idle_in_transaction_session_timeout').execute(conn);
      }
    });
  }
  // SQLite: Kysely runs each statement of a migration as a transaction of its own and takes no
  // lock, so a process killed between two statements of a migration left it half applied (the
  // next start failed on the first, "already exists"), and two processes starting together
  // both ran it. One IMMEDIATE transaction around the whole run makes it all or nothing, and
  // makes a second process wait for the first (busy time-out raised meanwhile) and then find
  // nothing pending.
  await sql`pragma temp_store = FILE`.execute(db);
  await sql`pragma busy_timeout = ${sql.lit(MIGRATION_LOCK_WAIT_MS)}`.execute(db);
  try {
    await sql`begin immediate`.execute(db);
    const result = await migrator(db, list).migrateToLatest();
    if (!result.error) await sql`commit`.execute(db);
    else {
      try {
        await sql`rollback`.execute(db);
      } catch {
        // SQLite rolled the transaction back itself (disk full, I/O error): "no transaction is
        // active" must not hide the migration's own error, which says why.
      }
    }
    return throwIfFailed(result);
  } finally {
    await sql`pragma busy_timeout = ${sql.lit(SQLITE_BUSY_TIMEOUT_MS)}`.execute(db);
    await sql`pragma temp_store = MEMORY`.execute(db);
  }
}

/**
 * How long a process waits for another's migrations to finish (SQLite), and (PostgreSQL) keeps
 * trying again after its migrations' lock time-outs.
 */
const MIGRATION_LOCK_WAIT_MS = 600_000;

/**
 * PostgreSQL: runs the next migration again while an attempt ends on a lock time-out (55P03; the
 * attempt's transaction, that one migration, was rolled back), waiting 1 s, 2 s, ...
 * up to 30 s between attempts, within the run's retry budget counted from `started`.
 */
async function retriedAfterLockTimeouts(run: () => Promise<MigrationResultSet>, lockTimeoutMs: number, o: MigrateOptions, started: number): Promise<MigrationResultSet> {
  const budget = o.lockRetryBudgetMs ?? MIGRATION_LOCK_WAIT_MS;
  for (let attempt = 1; ; attempt++) {
    const result = await run();
    if ((result.error as { code?: unknown } | undefined)?.code !== '55P03') return throwIfFailed(result);
    const migration = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'a migration';
    const retryInMs = Math.min((o.lockRetryDelayMs ?? 1000) * 2 ** (attempt - 1), 30_000);
    if (Date.now() - started + retryInMs > budget) {
      throw new DatabaseUnusableError(
        new Error(
          `migration ${migration} could not lock what it changes within ${lockTimeoutMs} ms in ${attempt} attempts over ${Math.round((Date.now() - started) / 1000)} s: ` +
            'a long transaction holds it (see pg_stat_activity); end that transaction and start again, or set DATABASE_MIGRATION_LOCK_TIMEOUT_MS=0 to wait for it without limit',
        ),
      );
    }
    o.onLockTimeout?.({ migration, attempt, retryInMs });
    await new Promise((resolve) => setTimeout(resolve, retryInMs));
  }
}

/**
 * A failed run as one line for the operator (main.ts prints a DatabaseUnusableError without a
 * stack): which migration failed and why, or that a newer release migrated the database.
 */
function throwIfFailed(result: MigrationResultSet): MigrationResultSet {
  if (!result.error) return result;
  const message = result.error instanceof Error ? result.error.message : String(result.error);
  const newer = /previously executed migration (\S+) is missing/.exec(message);
  if (newer) throw newerRelease(newer[1] as string);
  const failed = result.results?.find((r) => r.status === 'Error');
  throw new DatabaseUnusableError(new Error(failed ? `migration ${failed.migrationName} failed: ${message}` : message));
}

function newerRelease(migration: string): DatabaseUnusableError {
  return new DatabaseUnusableError(
    new Error(`it was migrated by a newer release of this service (migration ${migration} is unknown to this one): run that release, or restore the backup made before the upgrade`),
  );
}

/** True when every known migration has been applied. */
export async function migrationsApplied(db: Kysely<DB>): Promise<boolean> {
  const all = await migrator(db).getMigrations();
  return all.every((m) => m.executedAt !== undefined);
}

const UNREACHABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);
const UNREACHABLE_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end/;

/**
 * Each migration first turns the time-outs off for the rest of its transaction (PostgreSQL), and
 * limits its lock waits to `lockTimeoutMs` (set after Kysely's advisory lock is taken: waiting
 * for another instance's migrations has no such limit).
 */
function withoutTimeouts(list: Record<string, Migration>, lockTimeoutMs: number): Record<string, Migration> {
  if (!Number.isSafeInteger(lockTimeoutMs) || lockTimeoutMs < 0) throw new Error(`lock time-out must be a whole number of ms (got ${lockTimeoutMs})`);
  return Object.fromEntries(
    Object.entries(list).map(([name, m]) => [
      name,
      {
        ...m,
        up: async (db: Kysely<any>) => {
          await sql.raw(`${timeoutStatements(0, 'local')}; set local lock_timeout = ${lockTimeoutMs}`).execute(db);
          await m.up(db);
        },
      },
    ]),
  );
}

/**
 * PostgreSQL: the SET statements that give a connection these time-outs (ms; 0: none), for its
 * session or (`local`) for the rest of the transaction.
 */
function timeoutStatements(ms: number, scope: 'session' | 'local' = 'session'): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new Error(`statement time-out must be a whole number of ms (got ${ms})`);
  const set = scope === 'local' ? 'set local' : 'set';
  return `${set} statement_timeout = ${ms}; ${set} idle_in_transaction_session_timeout = ${ms}`;
}

/**
 * True when PostgreSQL ended a statement for taking too long: the statement time-out
 * (DATABASE_STATEMENT_TIMEOUT_MS; 57014 query_canceled, also an operator's pg_cancel_backend) or
 * a lock time-out (55P03). Retryable, like the database being unreachable.
 */
export function isStorageTimeout(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '57014' || code === '55P03';
}

/**
 * True when an error means the database cannot be used right now (down, unreachable, gone,
 * out of connections, locked, disk failing): PROTOCOL 2 answers such failures 503, retryable,
 * rather than 500.
 */
export function isStorageUnavailable(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | null;
  const code = typeof err?.code === 'string' ? err.code : '';
  if (UNREACHABLE_ERRNO.has(code)) return true;
  // PostgreSQL SQLSTATE: 08 connection exception, 53 insufficient resources, 57P operator
  // intervention (shutdown), 3D000 database does not exist, 28 authorization failure, 42P01
  // undefined table (the database was replaced by an unmigrated one: /readyz says so too).
  if (/^(08[0-9A-Z]{3}|53[0-9A-Z]{3}|57P[0-9A-Z]{2}|28[0-9A-Z]{3}|3D000|42P01|25P03)$/.test(code)) return true;
  if (isStorageTimeout(e)) return true;
  if (/^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY)/.test(code)) return true;
  return typeof err?.message === 'string' && (UNREACHABLE_MESSAGE.test(err.message) || /^no such table: /.test(err.message));
}
