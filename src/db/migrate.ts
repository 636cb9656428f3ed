import { Kysely, Migrator, sql, type Migration, type MigrationResultSet } from 'kysely';
import { DEFAULT_MIGRATION_LOCK_TIMEOUT_MS } from '../config/index.js';
import type { DB } from './schema.js';
import { isPostgres, type Database } from './database.js';
import { migrations } from './migrations/index.js';
import { DatabaseUnusableError } from './errors.js';
import { SQLITE_BUSY_TIMEOUT_MS } from './open-sqlite.js';
import { timeoutStatements } from './open-postgres.js';

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
  // openSqlite in open-sqlite.ts), so memory does not grow with the table.
  const sqlite = !isPostgres(database);
  if (!sqlite) {
    // PostgreSQL: Kysely runs each pending migration in a transaction, under an advisory lock.
    // A migration may rewrite a table: each one turns the statement time-out off for the rest
    // of that transaction (SET LOCAL, which PgBouncer keeps on the transaction's connection).
    const names = Object.keys(list ?? migrations);
    const applied = await appliedMigrations(db);
    if (names.every((name) => applied.has(name))) {
      // Nothing to run, and no SET sent; but a newer release's migrations are still refused.
      const unknown = [...applied].find((name) => !names.includes(name));
      if (unknown) throw newerRelease(unknown);
      return { results: [] };
    }
    const lockTimeoutMs = options.lockTimeoutMs ?? DEFAULT_MIGRATION_LOCK_TIMEOUT_MS;
    const unlimited = withoutTimeouts(list ?? migrations, lockTimeoutMs);
    // Waiting for another instance's migrations (the lock) must not time out either: the session
    // of this one connection goes without, and gets the pool's time-outs back after. Behind
    // PgBouncer (transaction pooling) these session SETs and the session lock may land on other
    // server connections: run upgrades' migrations through a direct connection there
    // (docs/deployment.md).
    return db.connection().execute(async (conn) => {
      await sql.raw(timeoutStatements(0)).execute(conn);
      await sql.raw(`with unlimited as (select set_config('lock_timeout', '0', true)) select pg_advisory_lock(${MIGRATE_LOCK_ID}) from unlimited`).execute(conn);
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
        await sql.raw(`select pg_advisory_unlock(${MIGRATE_LOCK_ID})`).execute(conn);
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
  const applied = await appliedMigrations(db);
  return Object.keys(migrations).every((name) => applied.has(name));
}

/**
 * PostgreSQL: the session advisory lock a whole migration run holds, from before Kysely's first
 * look at the schema to after its last migration. Kysely's own lock covers only each
 * migration's transaction; before each it reads every table's columns (pg_get_serial_sequence
 * by name), which fails with "column ... does not exist" while another process's migration
 * drops that column. With this lock one process runs every pending migration while the others
 * wait and then find nothing pending.
 */
export const MIGRATE_LOCK_ID = '7236145023148911317';

/**
 * The names of the migrations applied (kysely_migration); none on a database never migrated.
 * A plain read: Kysely's getMigrations reads the whole schema first (see MIGRATE_LOCK_ID).
 */
async function appliedMigrations(db: Kysely<DB>): Promise<Set<string>> {
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    return new Set(rows.map((r) => r.name));
  } catch (e) {
    const err = e as { code?: unknown; message?: unknown } | null;
    if (err?.code === '42P01' || (typeof err?.message === 'string' && err.message.startsWith('no such table: kysely_migration'))) return new Set();
    throw e;
  }
}

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
