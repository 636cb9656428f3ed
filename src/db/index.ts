import { DatabaseUnusableError } from './errors.js';
import type { Database, DatabaseOptions } from './database.js';
import { openSqlite } from './open-sqlite.js';
import { openPostgres } from './open-postgres.js';

export type { TransactionOptions, TransactionRunner, StatementRunner } from './group-commit.js';
export { isPostgres, type Database, type DatabaseOptions, type Dialect, type StoreDatabase } from './database.js';
export { DatabaseUnusableError, isStorageTimeout, isStorageUnavailable } from './errors.js';
export { MIGRATE_LOCK_ID, migrateToLatest, migrationsApplied, migrator, type LockTimeoutAttempt, type MigrateOptions } from './migrate.js';
export { SERVICE_TYPES } from './open-postgres.js';

export function openDatabase(url: string, options: DatabaseOptions = {}): Database {
  try {
    if (url.startsWith('sqlite:')) return openSqlite(url.slice('sqlite:'.length), options);
    return openPostgres(url, options);
  } catch (e) {
    // Its directory cannot be made, its file cannot be opened: nothing else has started yet.
    throw new DatabaseUnusableError(e);
  }
}
