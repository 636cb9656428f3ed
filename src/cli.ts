#!/usr/bin/env node
import { ConfigError, loadConfig } from './config/index.js';
import { migrateToLatest, openDatabase } from './db/index.js';
import { IdGenerator } from './lib/ids.js';
import { SecretBox } from './lib/secret-box.js';
import { resolveSecretsKey } from './lib/secrets-key.js';
import { rotateSecrets } from './secrets/rotate.js';
import { runNppaTest } from './compliance/nppa-test.js';

const USAGE = `usage: combo-platform <command>

commands:
  migrate                     apply pending database migrations (DATABASE_URL)
  rotate-secrets [--dry-run]  re-seal every stored secret with SECRETS_KEY, in one transaction
                              (old values are opened with SECRETS_KEY_PREVIOUS; see docs/operations.md)
  nppa-test                   run the national-system behaviour interface test cases for a game
                              (nppa-test --help)
`;

/** Command-line entry: `npm run cli -- <command>` or the `combo-platform` bin. */
async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  switch (command) {
    case 'migrate':
      return migrate();
    case 'rotate-secrets':
      return rotate(args);
    case 'nppa-test':
      return runNppaTest(args, process.env, (line) => process.stdout.write(`${line}\n`));
    default:
      process.stderr.write(USAGE);
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

async function rotate(args: string[]): Promise<number> {
  const unknown = args.filter((a) => a !== '--dry-run');
  if (unknown.length) {
    process.stderr.write(`rotate-secrets: unknown argument ${unknown.join(' ')}\n${USAGE}`);
    return 2;
  }
  const dryRun = args.includes('--dry-run');
  const config = loadConfig(process.env);
  const { key, source } = resolveSecretsKey(config.secretsKey, config.dataDir, config.production);
  const box = new SecretBox(key, config.secretsKeyPrevious ? [config.secretsKeyPrevious] : []);
  const database = openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  try {
    const report = await rotateSecrets(database.db, box, { ids: new IdGenerator(config.nodeId ?? undefined), now: Date.now(), dryRun });
    for (const c of report.columns) process.stdout.write(`${c.name}: ${c.resealed} re-sealed, ${c.current} already current\n`);
    process.stdout.write(
      `${dryRun ? 'dry run: would re-seal' : 're-sealed'} ${report.resealed} value(s) with key ${box.currentKeyId} (${source === 'SECRETS_KEY' ? 'SECRETS_KEY' : 'key file'})\n`,
    );
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
