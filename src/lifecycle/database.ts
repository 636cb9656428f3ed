import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { DatabaseUnusableError, isStorageUnavailable, migrateToLatest, openDatabase, type Database } from '../db/index.js';
import type { Clock } from '../lib/clock.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { SecretsKey } from '../lib/secrets-key.js';
import { checkSecretsKey } from '../secrets/key-check.js';

export interface ServiceDatabaseOptions {
  config: Config;
  logger: Logger;
  secrets: SecretBox;
  /** Where the secrets key came from: recorded, and named when it does not open the stored secrets. */
  secretsKeySource: SecretsKey | null;
  clock: Clock;
}

/**
 * The service's database, opened, migrated and checked against the secrets key; closed again
 * when any of that fails.
 */
export async function openServiceDatabase(o: ServiceDatabaseOptions): Promise<Database> {
  const { config, logger } = o;
  const database = openDatabase(config.databaseUrl, {
    sqliteSynchronous: config.sqliteSynchronous,
    sqliteCheckpointIntervalMs: config.sqliteCheckpointIntervalMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  });
  // A failing checkpoint fails again every interval (a full disk): one line a minute.
  const checkpointWarning = oncePerMinute();
  database.checkpointer?.on('failure', (e: Error) => {
    if (checkpointWarning()) logger.warn({ err: e }, 'SQLite WAL checkpoint on the worker thread failed; past the safety limit the writer checkpoints by itself');
  });
  try {
    await migrateToLatest(database, undefined, {
      lockTimeoutMs: config.databaseMigrationLockTimeoutMs,
      onLockTimeout: ({ migration, attempt, retryInMs }) =>
        logger.warn({ migration, attempt, retryInMs }, 'a migration waited too long for a table lock (a long transaction holds it); its attempt was rolled back and will be tried again'),
    });
  } catch (e) {
    await database.close();
    throw isStorageUnavailable(e) ? new DatabaseUnusableError(e) : e;
  }
  startPlayerIndexer(database, logger);
  try {
    await checkSecretsKey(database.db, o.secrets, o.secretsKeySource, o.clock.now());
  } catch (e) {
    await database.close();
    throw e;
  }
  return database;
}

/** True at most once a minute: for a warning that would repeat every interval. */
function oncePerMinute(): () => boolean {
  let last = 0;
  return () => {
    if (Date.now() - last < 60_000) return false;
    last = Date.now();
    return true;
  };
}

/**
 * SQLite: the worker that keeps a player's sessions indexed off the request path
 * (db/player-index.ts), started once the sessions table is migrated. A failing pass fails
 * again every second (a full disk): one warning a minute.
 */
function startPlayerIndexer(database: Database, logger: Logger): void {
  const indexer = database.startPlayerIndexer?.();
  const failureWarning = oncePerMinute();
  indexer?.on('failure', (e: Error) => {
    if (failureWarning()) logger.warn({ err: e }, 'the player index worker failed a pass; player listings stay exact and read more of the sessions table until it catches up');
  });
  indexer?.on('reset', () => logger.warn('the player index no longer matched the database (replaced, or rowids renumbered): it is being built again'));
}
