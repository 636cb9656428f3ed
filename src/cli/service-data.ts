import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/index.js';
import { openDatabase, type Database } from '../db/index.js';
import { resolveSecretsKey } from '../lib/secrets-key.js';
import { CommandError } from './io.js';

/**
 * The service's data as the maintenance commands (backup, rotate-secrets, nppa-test) find it.
 * They work on what the service made and never create any of it: a mistyped DATABASE_URL or
 * DATA_DIR is an error naming it, not a new empty database or a new secrets key.
 */

/** The SQLite file of DATABASE_URL, which must exist; null for PostgreSQL. */
export function existingSqliteFile(config: Config): string | null {
  if (!config.databaseUrl.startsWith('sqlite:')) return null;
  const file = config.databaseUrl.slice('sqlite:'.length);
  if (file === ':memory:' || !existsSync(file)) throw new CommandError(`no database file at ${file} (DATABASE_URL)`);
  return file;
}

export function openServiceDatabase(config: Config): Database {
  existingSqliteFile(config);
  return openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
}

/** SECRETS_KEY, or the key file the service made under DATA_DIR. */
export function serviceSecretsKey(config: Config): { key: Buffer; source: string } {
  const file = path.join(config.dataDir, 'secrets.key');
  if (!config.secretsKey && !config.production && !existsSync(file)) {
    throw new CommandError(`SECRETS_KEY is not set and there is no key file at ${file}: set SECRETS_KEY, or DATA_DIR to the service's`);
  }
  try {
    return resolveSecretsKey(config.secretsKey, config.dataDir, config.production);
  } catch (e) {
    throw new CommandError((e as Error).message);
  }
}
