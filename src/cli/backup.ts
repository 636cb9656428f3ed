import { existsSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { loadConfig } from '../config/index.js';
import { CommandError, parse, positionals, required, type Command, type Io } from './io.js';
import { existingSqliteFile } from './service-data.js';

/**
 * An online backup of the embedded SQLite database through SQLite's backup API (better-sqlite3
 * `db.backup()`): a consistent copy taken while the service keeps running and writing. The
 * copy is written beside the target and renamed into place when complete, so a backup file
 * that exists is always whole. PostgreSQL is backed up with pg_dump.
 */
async function run(args: string[], io: Io): Promise<number> {
  const { values, positionals: rest } = parse(args, { to: { type: 'string' }, force: { type: 'boolean' } });
  positionals(rest, []);
  const to = path.resolve(required(values, 'to'));
  const config = loadConfig(io.env);
  if (!config.databaseUrl.startsWith('sqlite:')) {
    throw new CommandError('DATABASE_URL is PostgreSQL: back it up with pg_dump (docs/guides/operators.md, "Back up and restore")');
  }
  const source = existingSqliteFile(config) as string;
  if (path.resolve(source) === to) throw new CommandError('--to is the database itself');
  if (existsSync(to) && values.force !== true) throw new CommandError(`${to} exists (--force replaces it)`);
  const partial = `${to}.partial`;
  rmSync(partial, { force: true });
  // A second connection that only reads: the backup API copies the pages of one snapshot.
  const db = new SQLite(source, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    // All pages in one step: one read transaction, which in WAL mode never blocks the
    // service's writers, and no restart because a write landed between steps.
    const result = await db.backup(partial, { progress: () => 0x7fffffff });
    renameSync(partial, to);
    io.out(`backed up ${path.resolve(source)} to ${to} (${result.totalPages} pages)\n`);
    return 0;
  } catch (e) {
    rmSync(partial, { force: true });
    throw new CommandError(`backup failed: ${(e as Error).message}`);
  } finally {
    db.close();
  }
}

export const backupCommand: Command = {
  name: 'backup',
  summary: 'copy the SQLite database to a file while the service runs (online backup)',
  help: `usage:
  combo-platform backup --to FILE [--force]

  Writes a consistent copy of the SQLite database of DATABASE_URL to FILE, safe while the
  service runs and writes (SQLite's online backup API). The copy appears under FILE only when
  complete. An existing FILE is refused unless --force. With SECRETS_KEY unset, also keep a
  copy of $DATA_DIR/secrets.key: without it the copied secrets cannot be opened.
  PostgreSQL: use pg_dump (docs/guides/operators.md).`,
  run,
};
