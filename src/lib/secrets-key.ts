import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The secrets key and where it came from. */
export interface SecretsKey {
  key: Buffer;
  /** 'SECRETS_KEY', or the key file's absolute path. */
  source: string;
  /** The key file was created by this call (none was found under DATA_DIR). */
  created: boolean;
  /** DATA_DIR as given (may be relative), and the working directory it was resolved from. */
  dataDirSetting: string;
  cwd: string;
}

/**
 * The key that encrypts secrets at rest: SECRETS_KEY when set (required in production and for
 * several instances); otherwise a key file created once under the data directory, so a
 * newcomer's `npm start` works with nothing configured.
 */
export function resolveSecretsKey(configured: Buffer | null, dataDir: string, production: boolean, dataDirSetting = dataDir): SecretsKey {
  const cwd = process.cwd();
  if (configured) return { key: configured, source: 'SECRETS_KEY', created: false, dataDirSetting, cwd };
  if (production) throw new Error('SECRETS_KEY must be set when NODE_ENV=production (openssl rand -base64 32)');
  const file = path.join(dataDir, 'secrets.key');
  let text: string;
  let created = false;
  try {
    if (!existsSync(file)) {
      created = true;
      mkdirSync(dataDir, { recursive: true });
      writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    }
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot use DATA_DIR=${dataDir} for the secrets key file (or set SECRETS_KEY): ${(e as Error).message}`);
  }
  const key = Buffer.from(text.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${file} must hold 32 base64-encoded bytes`);
  return { key, source: file, created, dataDirSetting, cwd };
}
