#!/usr/bin/env node
import { ConfigError, loadConfig } from './config/index.js';
import { migrateToLatest, openDatabase } from './db/index.js';
import { runNppaTest } from './compliance/nppa-test.js';

/** Command-line entry: `npm run cli -- <command>` or the `combo-platform` bin. */
async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'migrate':
      return migrate();
    case 'nppa-test':
      return runNppaTest(rest, process.env, (line) => process.stdout.write(`${line}\n`));
    default:
      process.stderr.write('usage: combo-platform <command>\n\ncommands:\n  migrate     apply pending database migrations (DATABASE_URL)\n  nppa-test   run the national-system behaviour interface test cases for a game (nppa-test --help)\n');
      return command === undefined || command === 'help' || command === '--help' ? 0 : 2;
  }
}

async function migrate(): Promise<number> {
  const config = loadConfig(process.env);
  const database = openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  try {
    const result = await migrateToLatest(database.db);
    const applied = result.results?.filter((r) => r.status === 'Success').map((r) => r.migrationName) ?? [];
    process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'database is up to date\n');
    return 0;
  } finally {
    await database.close();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(err instanceof ConfigError ? `${err.message}\n` : `error: ${(err as Error).message}\n`);
    process.exit(err instanceof ConfigError ? 2 : 1);
  },
);
