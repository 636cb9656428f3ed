import { loadConfig } from '../config/index.js';
import { migrateToLatest, openDatabase } from '../db/index.js';
import { parse, positionals, type Command, type Io } from './io.js';

async function run(args: string[], io: Io): Promise<number> {
  positionals(parse(args, {}).positionals, []);
  const config = loadConfig(io.env);
  const database = openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  try {
    const result = await migrateToLatest(database, undefined, {
      lockTimeoutMs: config.databaseMigrationLockTimeoutMs,
      onLockTimeout: ({ migration, attempt, retryInMs }) =>
        io.err(`migration ${migration} waited more than ${config.databaseMigrationLockTimeoutMs} ms for a table lock (attempt ${attempt}; a long transaction holds it): rolled back, trying again in ${retryInMs / 1000} s\n`),
    });
    const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
    io.out(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    return 0;
  } finally {
    await database.close();
  }
}

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'apply pending database migrations (DATABASE_URL)',
  help: `usage:
  combo-platform migrate

  Applies pending migrations to DATABASE_URL (the service also does this at start).
  On PostgreSQL a migration waits at most DATABASE_MIGRATION_LOCK_TIMEOUT_MS (default 2000)
  for a table lock, then is rolled back and tried again, for up to 10 minutes.`,
  run,
};
