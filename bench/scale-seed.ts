/**
 * Fills a migrated database with ROWS orders and ROWS sessions (scale-rows.ts) by SQL set
 * operations: a recursive CTE on SQLite, generate_series on PostgreSQL.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { playerIndexFile } from '../src/db/player-index.js';
import { seededTables } from './scale-rows.js';
import { ROWS, log, secondsSince } from './scale-settings.js';

const BATCH = 1_000_000;

/** [from, to] (both included) of each insert of BATCH rows. */
function* batches(): Generator<[number, number]> {
  for (let from = 0; from < ROWS; from += BATCH) yield [from, Math.min(ROWS, from + BATCH) - 1];
}

/** Logs `what` (the database and table) with the rows inserted through row `to` and the rate since `t`. */
function logBatch(what: string, to: number, t: number): void {
  log(`${what}: ${to + 1} rows (${Math.round((to + 1) / ((Date.now() - t) / 1000))} rows/s)`);
}

export function seedSqlite(file: string): void {
  const db = new Database(file);
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -4000000'); // 4 GB page cache while seeding
  db.pragma('temp_store = MEMORY');
  const now = Date.now() - 60_000;
  for (const [table, cols, select] of seededTables('sqlite', now)) loadSqliteTable(db, table, cols, select);
  fillPlayerIndex(db, file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

function loadSqliteTable(db: Database.Database, table: string, cols: string, select: string): void {
  // Secondary indexes made by the migrations are dropped during the load and made again from
  // their own SQL afterwards (one sort instead of 10 million random inserts).
  const indexes = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`).all(table) as { name: string; sql: string }[];
  for (const ix of indexes) db.exec(`DROP INDEX "${ix.name}"`);
  const t = Date.now();
  for (const [from, to] of batches()) {
    db.exec(`INSERT INTO ${table} (${cols}) WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to}) ${select} FROM n`);
    logBatch(`sqlite ${table}`, to, t);
  }
  for (const ix of indexes) {
    const ti = Date.now();
    db.exec(ix.sql);
    log(`sqlite ${table}: index ${ix.name} in ${secondsSince(ti)} s`);
  }
}

/**
 * The player index beside the database (src/db/player-index.ts), filled as its worker would
 * have filled it under the load, but in one sorted insert: the service's worker then finds it
 * caught up, and the listings are measured at their steady state. (The worker's own rate when
 * it builds the file from nothing is in docs/operations.md, "Durability".)
 */
function fillPlayerIndex(db: Database.Database, file: string): void {
  const t = Date.now();
  db.prepare('ATTACH DATABASE ? AS d').run(playerIndexFile(file));
  const secondary = db.prepare(`SELECT name, sql FROM d.sqlite_master WHERE type = 'index' AND sql IS NOT NULL`).all() as { name: string; sql: string }[];
  for (const ix of secondary) db.exec(`DROP INDEX d."${ix.name}"`);
  db.exec('DELETE FROM d.session_players');
  db.exec('INSERT INTO d.session_players SELECT game_id, combo_id, created_at, session_id FROM sessions ORDER BY game_id, combo_id, created_at, session_id');
  for (const ix of secondary) db.exec(ix.sql.replace(/^CREATE INDEX (\S+)/i, 'CREATE INDEX d.$1'));
  db.exec('UPDATE d.progress SET (through, game_id, session_id) = (SELECT rowid, game_id, session_id FROM sessions ORDER BY rowid DESC LIMIT 1)');
  db.exec('DETACH DATABASE d');
  log(`sqlite sessions: player index in ${secondsSince(t)} s`);
}

export async function seedPostgres(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`SET synchronous_commit = off`);
    await c.query(`SET maintenance_work_mem = '1GB'`);
    const now = Date.now() - 60_000;
    for (const [table, cols, select] of seededTables('postgres', now)) await loadPostgresTable(c, table, cols, select);
  } finally {
    await c.end();
  }
}

async function loadPostgresTable(c: pg.Client, table: string, cols: string, select: string): Promise<void> {
  // Constraints and indexes made by the migrations are dropped during the load and made
  // again from their own definitions afterwards.
  const cons = (await c.query(`SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('p', 'u')`, [table])).rows as { conname: string; def: string }[];
  const idx = (await c.query(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass)`, [table])).rows as { indexname: string; indexdef: string }[];
  for (const i of idx) await c.query(`DROP INDEX "${i.indexname}"`);
  for (const k of cons) await c.query(`ALTER TABLE ${table} DROP CONSTRAINT "${k.conname}"`);
  const t = Date.now();
  for (const [from, to] of batches()) {
    await c.query(`INSERT INTO ${table} (${cols}) ${select} FROM generate_series(${from}::bigint, ${to}::bigint) AS g(i)`);
    logBatch(`postgres ${table}`, to, t);
  }
  for (const k of cons) await timedQuery(c, `ALTER TABLE ${table} ADD CONSTRAINT "${k.conname}" ${k.def}`, `postgres ${table}: constraint ${k.conname}`);
  for (const i of idx) await timedQuery(c, i.indexdef, `postgres ${table}: index ${i.indexname}`);
  // What autovacuum would do soon after such a load: statistics and the visibility map.
  await timedQuery(c, `VACUUM ANALYZE ${table}`, `postgres ${table}: vacuum analyze`);
}

/** Runs `sql`, then logs `what` with the seconds it took. */
async function timedQuery(c: pg.Client, sql: string, what: string): Promise<void> {
  const t = Date.now();
  await c.query(sql);
  log(`${what} in ${secondsSince(t)} s`);
}
