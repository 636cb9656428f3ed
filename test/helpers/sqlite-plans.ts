import SQLite from 'better-sqlite3';
import { Kysely, SqliteDialect, sql, type CompiledQuery } from 'kysely';
import { migrateToLatest, openDatabase } from '../../src/db/index.js';
import { attachPlayerIndex } from '../../src/db/player-index.js';
import type { DB } from '../../src/db/schema.js';
import { createTestDatabase, type TestDatabase } from './db.js';

/** Games inserted as rows (no secret, no product): enough for the queries that join or list games. */
export async function insertGames(db: Kysely<DB>, ...ids: string[]): Promise<void> {
  for (const id of ids) {
    await sql`insert into games (game_id, name, iap_enabled, sandbox_payments, order_ttl_seconds, rate_limit_per_second, created_at, updated_at)
      values (${id}, ${id}, 1, 1, 900, 100, 0, 0)`.execute(db);
  }
}

export interface LoggedSqlite {
  kysely: Kysely<DB>;
  /** Every query sent through `kysely`, in order; empty it before the call under test. */
  seen: CompiledQuery[];
  /** What SQLite plans for `query`: the `detail` lines of EXPLAIN QUERY PLAN. */
  plan(query: CompiledQuery): string[];
}

/** A Kysely over the SQLite file `file` that records the queries it sends, to read their plans. */
export function loggedSqlite(file: string): LoggedSqlite {
  const raw = new SQLite(file);
  // As on the service's read-only connection: a player's sessions read the player index too.
  attachPlayerIndex(raw, file);
  const seen: CompiledQuery[] = [];
  const kysely = new Kysely<DB>({
    dialect: new SqliteDialect({ database: raw }),
    log: (e) => void (e.level === 'query' && seen.push(e.query)),
  });
  const plan = (query: CompiledQuery) =>
    raw
      .prepare(`EXPLAIN QUERY PLAN ${query.sql}`)
      .all(...(query.parameters as unknown[]))
      .map((r) => (r as { detail: string }).detail);
  return { kysely, seen, plan };
}

/**
 * A fresh test database, migrated, with these games and whatever `seed` writes; then closed and
 * opened again through `loggedSqlite`, so that the test reads the plans of what it sends.
 */
export async function plannedDatabase(games: string[], seed?: (db: Kysely<DB>) => Promise<void>): Promise<{ tdb: TestDatabase; sqlite: LoggedSqlite }> {
  const tdb = await createTestDatabase();
  const database = openDatabase(tdb.url);
  await migrateToLatest(database);
  await insertGames(database.db, ...games);
  await seed?.(database.db);
  await database.close();
  return { tdb, sqlite: loggedSqlite(tdb.url.slice('sqlite:'.length)) };
}
