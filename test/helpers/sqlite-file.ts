import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { executeDirect } from '../../src/db/direct.js';
import { migrateToLatest, openDatabase, type Database } from '../../src/db/index.js';

export interface TestSqliteFile {
  dir: string;
  file: string;
  database: Database;
}

/**
 * A migrated SQLite database in a file of its own, with a plain table `t (x integer primary
 * key)` for tests of the storage layer itself (group commit, read snapshots).
 */
export async function migratedSqliteFile(prefix: string): Promise<TestSqliteFile> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const file = path.join(dir, 'test.db');
  const database = openDatabase(`sqlite:${file}`);
  await migrateToLatest(database);
  await sql`create table t (x integer primary key)`.execute(database.db);
  return { dir, file, database };
}

/** Closes the database and removes its directory. */
export async function removeSqliteFile(f: { dir: string; database: Database }): Promise<void> {
  await f.database.close();
  rmSync(f.dir, { recursive: true, force: true });
}

/** The rows of `t` read as the stores' prepared reads run: on the read-only connection. */
export async function readDirectly(database: Database): Promise<number[]> {
  const result = await executeDirect<{ x: number }>(database.db, 'select x from t order by x', []);
  if (!result) throw new Error('the root handle has no read-only connection');
  return result.rows.map((r) => r.x);
}

/** Resolves in the check phase of the current event-loop turn, after its I/O. */
export const nextTurn = (): Promise<void> => new Promise<void>((resolve) => setImmediate(resolve));
