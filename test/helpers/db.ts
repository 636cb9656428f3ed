import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Kysely } from 'kysely';
import { isPostgres, type Dialect, type StoreDatabase } from '../../src/db/index.js';
import type { DB } from '../../src/db/schema.js';
import { waitFor } from './wait.js';

/** Which database this run of the suite uses: TEST_DB=sqlite (default) or postgres. */
export const TEST_DB = (process.env.TEST_DB ?? 'sqlite') as 'sqlite' | 'postgres';
export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A pg.Pool for a test's own connections to its database. Its clients get an error listener: a
 * pool's end() resolves before its clients have closed, so the database's drop (WITH FORCE) can
 * end one while it closes, and an error of a pool without a listener is an uncaught exception.
 */
export function testPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  pool.on('error', () => {});
  return pool;
}

/** A fresh, empty database of the suite's kind: an SQLite file, or a new PostgreSQL database. */
export async function createTestDatabase(): Promise<TestDatabase> {
  if (TEST_DB === 'sqlite') {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-test-'));
    return { url: `sqlite:${path.join(dir, 'test.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(PG_ADMIN_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/**
 * A store's database (StoreDatabase) over a bare Kysely, for tests that watch the statements of
 * their own connection: each transaction is its own; a one-statement write runs alone on
 * PostgreSQL and in a transaction on SQLite, as in the service (there, in a group commit's).
 */
export function storeDatabase(db: Kysely<DB>, dialect: Dialect): StoreDatabase {
  const transaction: StoreDatabase['transaction'] = (fn) => db.transaction().execute(fn);
  return { db, dialect, transaction, oneStatement: (fn) => (isPostgres({ dialect }) ? fn(db) : transaction(fn)) };
}

/**
 * Resolves once at least `n` connections to the PostgreSQL database at `url` wait on a
 * heavyweight lock (pg_stat_activity's `wait_event_type = 'Lock'`). It asks from a connection
 * of its own, outside any transaction: inside one, pg_stat_activity stays as that transaction
 * first read it, and a wait that starts later is never seen.
 */
export async function lockWaiters(url: string, what: string, n = 1): Promise<void> {
  const watcher = new pg.Client({ connectionString: url });
  watcher.on('error', () => {});
  await watcher.connect();
  try {
    await waitFor(async () => {
      const { rows } = await watcher.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'");
      return rows[0]!.n >= n;
    }, what);
  } finally {
    await watcher.end().catch(() => {});
  }
}
