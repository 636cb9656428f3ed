/**
 * `npm run bench:scale`: the service with 10 million orders and 10 million sessions.
 *
 * For each database (SQLite, PostgreSQL): a fresh database is migrated and given 4 games by the
 * service itself (admin API), then filled by SQL set operations (a recursive CTE on SQLite,
 * generate_series on PostgreSQL) with SCALE_ROWS orders and SCALE_ROWS sessions spread over 180
 * days, 4 games (50/30/15/5 %) and 1,000,000 players. An empty database is prepared the same way
 * without the rows. Both services are started from the build and measured back to back:
 * create-order and enter-game (autocannon, 64 connections, pre-signed unique requests; req/s,
 * p50/p99 and server CPU µs per request), then the operator listings (GET /admin/v1/orders and
 * /admin/v1/sessions for every filter combination, and cursor paging deep into the data), each
 * timed sequentially: p50/p99/max per query; then the listings without a game again with
 * SCALE_MORE_GAMES empty games added.
 *
 * Settings: SCALE_ROWS (10000000), SCALE_DB (sqlite|postgres|both; both), SCALE_DIR (where the
 * SQLite files and the game secrets live; /tmp/combo-scale), SCALE_PG_URL
 * (postgres://postgres@127.0.0.1:5432; databases `combo_scale` and `combo_scale_empty` are
 * created there), SCALE_REUSE=1 (keep a seeded database from an earlier run with the same
 * SCALE_ROWS), SCALE_ROUNDS (empty/full measurement pairs, 2), SCALE_LIST_RUNS (timed runs per
 * listing query, 20), SCALE_MORE_GAMES (empty games added for the second pass of listings, 400;
 * 0: none), SCALE_WARMUP (s of untimed load on each service first, 5), BENCH_DURATION (s per throughput measurement, 10), BENCH_CONNECTIONS (64),
 * SCALE_SEED_ONLY=1 (prepare the databases, measure nothing), SCALE_DROP=1 (drop the PostgreSQL databases and SQLite files at the end).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';
import { ADMIN, adminCall, cpuMs, presigned, quantile, requestOptions, rssMb, startService, type RequestStream, type Service } from './lib.js';
import { playerIndexFile } from '../src/db/player-index.js';

const ROWS = Number(process.env.SCALE_ROWS ?? 10_000_000);
const KINDS = (process.env.SCALE_DB ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.env.SCALE_DB!];
const DIR = process.env.SCALE_DIR ?? path.join(os.tmpdir(), 'combo-scale');
const PG_URL = (process.env.SCALE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/$/, '');
const REUSE = process.env.SCALE_REUSE === '1';
const ROUNDS = Number(process.env.SCALE_ROUNDS ?? 2);
const LIST_RUNS = Number(process.env.SCALE_LIST_RUNS ?? 20);
const duration = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.SCALE_WARMUP ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const MORE_GAMES = Number(process.env.SCALE_MORE_GAMES ?? 400);
/** Fixed so that a reused database's encrypted game secrets stay readable. */
const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

const GAMES = ['scale_g1', 'scale_g2', 'scale_g3', 'scale_g4'];
const PRODUCTS = [
  { id: 'gem_60', price: 600 },
  { id: 'gem_300', price: 3000 },
  { id: 'gem_980', price: 9800 },
];
const PLAYERS = 1_000_000;
const SPAN_MS = 180 * 86_400_000;
const EPOCH = 1_704_067_200_000; // of the snowflake order ids (src/lib/ids.ts)
const SEED_NODE = 1000; // node id of seeded order ids; running services draw theirs at random

const log = (s: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${s}\n`);

interface Setup {
  databaseUrl: string;
  secrets: Record<string, string>;
}

interface Throughput {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  non2xx: number;
}

// ---------------------------------------------------------------------------------------------
// Seeding. Row i (0..ROWS-1) of each table is a pure function of i: a few multiplicative hashes
// give game, player, product, status and durations; time grows with i (as ids do in production).

/** Shared SQL expressions; `i` is the row number, `t0` the first created_at. */
function exprs(kind: 'sqlite' | 'postgres', t0: number) {
  const step = Math.floor(SPAN_MS / ROWS);
  const created = `(${t0} + i * ${step})`;
  const pct = `((i * 37) % 100)`; // game share
  const game = `CASE WHEN ${pct} < 50 THEN 'scale_g1' WHEN ${pct} < 80 THEN 'scale_g2' WHEN ${pct} < 95 THEN 'scale_g3' ELSE 'scale_g4' END`;
  // 10 % of rows go to 10,000 heavy players, the rest spread over all 1,000,000.
  const playerNo = `CASE WHEN i % 10 = 0 THEN (i * 7919) % 10000 ELSE (i * 2654435761) % ${PLAYERS} END`;
  const player = kind === 'sqlite' ? `printf('p%07d', ${playerNo})` : `'p' || lpad((${playerNo})::text, 7, '0')`;
  const hex16 = kind === 'sqlite' ? `lower(hex(randomblob(16)))` : `md5(i::text || '${randomBytes(4).toString('hex')}')`;
  const least = kind === 'sqlite' ? 'min' : 'least';
  const greatest = kind === 'sqlite' ? 'max' : 'greatest';
  return { step, created, game, player, hex16, least, greatest };
}

function ordersSelect(kind: 'sqlite' | 'postgres', t0: number, now: number): string {
  const { created, game, player, hex16, greatest } = exprs(kind, t0);
  const prod = `(((i * 40503) / 1000) % 3)`;
  const st = `(((i * 2654435761) / 1000000) % 100)`; // independent of the game share
  // The last 30 minutes (the order TTL) are unpaid; older orders: 55 % expired, 35 % delivered,
  // 4 % canceled, 2 % refunded, 4 % paid (delivery pending or failed).
  const status = `CASE WHEN ${created} > ${now - 1_800_000} THEN 'created' WHEN ${st} < 55 THEN 'expired' WHEN ${st} < 90 THEN 'delivered' WHEN ${st} < 94 THEN 'canceled' WHEN ${st} < 96 THEN 'refunded' ELSE 'paid' END`;
  const text = (s: string) => (kind === 'sqlite' ? s : `${s}::text`);
  return `
    SELECT
      ${text(`((${created} - ${EPOCH}) * 4194304 + ${SEED_NODE} * 4096 + i % 4096)`)} AS order_id,
      ${game} AS game_id,
      'ref-' || i AS reference_id,
      ${player} AS combo_id,
      CASE ${prod} WHEN 0 THEN 'gem_60' WHEN 1 THEN 'gem_300' ELSE 'gem_980' END AS product_id,
      CASE WHEN i % 5 < 3 THEN 'android' WHEN i % 5 = 3 THEN 'ios' ELSE 'windows' END AS platform,
      'https://' || ${game} || '.example.com/notify' AS notify_url,
      1 AS quantity,
      '{"zone_id":"z' || (i % 7) || '","server_id":"s' || (i % 40) || '","role_id":"r' || i || '","role_level":' || (i % 90) || '}' AS meta,
      NULL AS context,
      CASE ${prod} WHEN 0 THEN 600 WHEN 1 THEN 3000 ELSE 9800 END AS amount,
      'CNY' AS currency,
      ${status} AS status,
      ${hex16} AS token_secret,
      CASE WHEN i % 50 = 0 THEN 1 ELSE 0 END AS is_sandbox,
      0 AS late_payment,
      ${created} AS created_at,
      ${created} + 1800000 AS expires_at,
      ${created} + CASE ${status} WHEN 'created' THEN 0 WHEN 'expired' THEN 1801000 WHEN 'canceled' THEN 60000 WHEN 'refunded' THEN 86400000 WHEN 'delivered' THEN 30500 ELSE 30000 END AS updated_at,
      CASE WHEN ${status} IN ('paid', 'delivered', 'refunded') THEN ${created} + 30000 END AS paid_at,
      CASE WHEN ${status} IN ('delivered', 'refunded') THEN ${created} + 30500 END AS delivered_at,
      CASE WHEN ${status} = 'expired' THEN ${created} + 1801000 END AS expired_at,
      CASE WHEN ${status} = 'canceled' THEN ${created} + 60000 END AS canceled_at,
      CASE WHEN ${status} = 'refunded' THEN ${greatest}(${created} + 86400000, 0) END AS refunded_at`;
}

function sessionsSelect(kind: 'sqlite' | 'postgres', t0: number, now: number): string {
  const { created, game, player, hex16, least } = exprs(kind, t0);
  // Sessions of the last 2 hours: one in three still open. Closed ones lasted 1 min..3 h
  // (capped at now); 2 % closed by the timeout sweep, the rest by leave-game.
  const open = `(${created} > ${now - 7_200_000} AND i % 3 = 0)`;
  return `
    SELECT
      ${game} AS game_id,
      ${hex16} AS session_id,
      ${player} AS combo_id,
      ${created} AS entered_at,
      CASE WHEN ${open} THEN NULL ELSE ${least}(${created} + 60000 + ((i * 7907) % 10800) * 1000, ${now}) END AS left_at,
      CASE WHEN ${open} THEN NULL WHEN i % 50 = 0 THEN 'timeout' ELSE 'leave' END AS close_reason,
      ${created} AS created_at`;
}

const ORDER_COLS = 'order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, meta, context, amount, currency, status, token_secret, is_sandbox, late_payment, created_at, expires_at, updated_at, paid_at, delivered_at, expired_at, canceled_at, refunded_at';
const SESSION_COLS = 'game_id, session_id, combo_id, entered_at, left_at, close_reason, created_at';
const BATCH = 1_000_000;

function seedSqlite(file: string): void {
  const db = new Database(file);
  db.pragma('synchronous = OFF');
  db.pragma('cache_size = -4000000'); // 4 GB page cache while seeding
  db.pragma('temp_store = MEMORY');
  const now = Date.now() - 60_000;
  const t0 = now - SPAN_MS;
  for (const [table, cols, select] of [
    ['orders', ORDER_COLS, ordersSelect('sqlite', t0, now)],
    ['sessions', SESSION_COLS, sessionsSelect('sqlite', t0, now)],
  ] as const) {
    // Secondary indexes made by the migrations are dropped during the load and made again from
    // their own SQL afterwards (one sort instead of 10 million random inserts).
    const indexes = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`).all(table) as { name: string; sql: string }[];
    for (const ix of indexes) db.exec(`DROP INDEX "${ix.name}"`);
    const t = Date.now();
    for (let from = 0; from < ROWS; from += BATCH) {
      const to = Math.min(ROWS, from + BATCH) - 1;
      db.exec(`INSERT INTO ${table} (${cols}) WITH RECURSIVE n(i) AS (SELECT ${from} UNION ALL SELECT i + 1 FROM n WHERE i < ${to}) ${select} FROM n`);
      log(`sqlite ${table}: ${to + 1} rows (${Math.round((to + 1) / ((Date.now() - t) / 1000))} rows/s)`);
    }
    for (const ix of indexes) {
      const ti = Date.now();
      db.exec(ix.sql);
      log(`sqlite ${table}: index ${ix.name} in ${((Date.now() - ti) / 1000).toFixed(1)} s`);
    }
  }
  fillPlayerIndex(db, file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
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
  log(`sqlite sessions: player index in ${((Date.now() - t) / 1000).toFixed(1)} s`);
}

async function seedPostgres(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`SET synchronous_commit = off`);
    await c.query(`SET maintenance_work_mem = '1GB'`);
    const now = Date.now() - 60_000;
    const t0 = now - SPAN_MS;
    for (const [table, cols, select] of [
      ['orders', ORDER_COLS, ordersSelect('postgres', t0, now)],
      ['sessions', SESSION_COLS, sessionsSelect('postgres', t0, now)],
    ] as const) {
      // Constraints and indexes made by the migrations are dropped during the load and made
      // again from their own definitions afterwards.
      const cons = (await c.query(`SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('p', 'u')`, [table])).rows as { conname: string; def: string }[];
      const idx = (await c.query(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass)`, [table])).rows as { indexname: string; indexdef: string }[];
      for (const i of idx) await c.query(`DROP INDEX "${i.indexname}"`);
      for (const k of cons) await c.query(`ALTER TABLE ${table} DROP CONSTRAINT "${k.conname}"`);
      const t = Date.now();
      for (let from = 0; from < ROWS; from += BATCH) {
        const to = Math.min(ROWS, from + BATCH) - 1;
        await c.query(`INSERT INTO ${table} (${cols}) ${select} FROM generate_series(${from}::bigint, ${to}::bigint) AS g(i)`);
        log(`postgres ${table}: ${to + 1} rows (${Math.round((to + 1) / ((Date.now() - t) / 1000))} rows/s)`);
      }
      for (const k of cons) {
        const ti = Date.now();
        await c.query(`ALTER TABLE ${table} ADD CONSTRAINT "${k.conname}" ${k.def}`);
        log(`postgres ${table}: constraint ${k.conname} in ${((Date.now() - ti) / 1000).toFixed(1)} s`);
      }
      for (const i of idx) {
        const ti = Date.now();
        await c.query(i.indexdef);
        log(`postgres ${table}: index ${i.indexname} in ${((Date.now() - ti) / 1000).toFixed(1)} s`);
      }
      const tv = Date.now();
      // What autovacuum would do soon after such a load: statistics and the visibility map.
      await c.query(`VACUUM ANALYZE ${table}`);
      log(`postgres ${table}: vacuum analyze in ${((Date.now() - tv) / 1000).toFixed(1)} s`);
    }
  } finally {
    await c.end();
  }
}

async function pgAdmin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: `${PG_URL}/postgres` });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A database migrated and given the games by the service itself; `seed` fills it. */
async function prepare(kind: string, full: boolean): Promise<Setup> {
  const name = full ? `combo_scale` : `combo_scale_empty`;
  const sqliteFile = path.join(DIR, `${name}.db`);
  const databaseUrl = kind === 'sqlite' ? `sqlite:${sqliteFile}` : `${PG_URL}/${name}`;
  const marker = path.join(DIR, `${name}.${kind}.json`);
  if (full && REUSE && existsSync(marker)) {
    const m = JSON.parse(readFileSync(marker, 'utf8')) as Setup & { rows: number };
    if (m.rows === ROWS) {
      log(`${kind}: reusing the seeded database ${databaseUrl} (${ROWS} rows)`);
      return m;
    }
  }
  rmSync(marker, { force: true });
  if (kind === 'sqlite') {
    for (const s of ['', '-wal', '-shm', '-player-index', '-player-index-wal', '-player-index-shm']) rmSync(sqliteFile + s, { force: true });
  } else {
    await pgAdmin(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${name}`);
      await c.query(`CREATE DATABASE ${name}`);
    });
  }
  // The service migrates at start; games and products are made through its admin API.
  const svc = await startService({ DATABASE_URL: databaseUrl, DATA_DIR: DIR, SECRETS_KEY });
  const secrets: Record<string, string> = {};
  try {
    for (const g of GAMES) {
      secrets[g] = (await adminCall(svc.address, 'POST', '/admin/v1/games', { game_id: g, name: g, rate_limit_per_second: 1_000_000 })).secret_key;
      for (const p of PRODUCTS) await adminCall(svc.address, 'PUT', `/admin/v1/games/${g}/products/${p.id}`, { name: p.id, price: p.price, currency: 'CNY' });
    }
  } finally {
    await svc.stop();
  }
  if (full) {
    const t = Date.now();
    log(`${kind}: seeding ${ROWS} orders and ${ROWS} sessions...`);
    if (kind === 'sqlite') seedSqlite(sqliteFile);
    else await seedPostgres(databaseUrl);
    log(`${kind}: seeded in ${((Date.now() - t) / 1000).toFixed(0)} s`);
  }
  const setup = { databaseUrl, secrets };
  if (full) writeFileSync(marker, JSON.stringify({ ...setup, rows: ROWS }));
  return setup;
}

// ---------------------------------------------------------------------------------------------
// Measurements.

async function throughput(svc: Service, source: RequestStream): Promise<Throughput> {
  const cpu0 = cpuMs(svc.child.pid);
  const r = await autocannon({ url: svc.address, connections, duration, ...requestOptions(source) });
  const cpu = cpuMs(svc.child.pid) - cpu0;
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, cpuUsPerReq: Math.round((cpu * 1000) / Math.max(1, r.requests.total)), non2xx: r.non2xx };
}

let runNo = 0;
function createOrders(secret: string, game: string) {
  const run = `${randomBytes(4).toString('hex')}-${runNo++}`;
  const n = Math.max(50_000, duration * 30_000);
  return presigned(
    n,
    (i) => ({
      path: '/v1/server/create-order',
      body: JSON.stringify({
        reference_id: `bench-${run}-${i}`,
        // existing players (the purchase guard reads their month's orders)
        combo_id: `p${String((i * 7919) % PLAYERS).padStart(7, '0')}`,
        product_id: 'gem_60',
        platform: 'ios',
        notify_url: 'https://game.example.com/notify',
        quantity: 1,
        meta: { zone_id: 'z1', server_id: 's1', role_id: `r${i % 5000}`, role_name: 'bench', role_level: 12 },
      }),
    }),
    game,
    secret,
  );
}

function enterGames(secret: string, game: string) {
  const run = `${randomBytes(4).toString('hex')}-${runNo++}`;
  const n = Math.max(50_000, duration * 30_000);
  return presigned(n, (i) => ({ path: '/v1/server/enter-game', body: JSON.stringify({ combo_id: `p${String((i * 7919) % PLAYERS).padStart(7, '0')}`, session_id: `bench-${run}-${i}` }) }), game, secret);
}

interface ListTiming {
  name: string;
  rows: number;
  p50: number;
  p99: number;
  max: number;
}

async function timeGet(base: string, uri: string, runs: number): Promise<{ ms: number[]; body: any }> {
  const ms: number[] = [];
  let body: any;
  for (let k = 0; k < runs; k++) {
    const t = performance.now();
    const r = await fetch(base + uri, { headers: { authorization: `Bearer ${ADMIN}` } });
    body = await r.json();
    ms.push(performance.now() - t);
    if (r.status !== 200) {
      log(`GET ${uri}: ${r.status} ${JSON.stringify(body)}`);
      return { ms: [...ms, Number.POSITIVE_INFINITY], body: { data: [], next_cursor: null } };
    }
  }
  return { ms, body };
}

const cursorOf = (v: unknown[]) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');

/** Every listing query timed: [name, uri]; the cursor walks are in `listings`. */
async function listingQueries(svc: Service): Promise<[string, string][]> {
  const now = Date.now();
  const mid = now - SPAN_MS / 2;
  const old = now - SPAN_MS + 86_400_000; // one day after the oldest row
  const deepOrder = (t: number) => cursorOf([t, String((BigInt(t - EPOCH) << 22n) | 0xfffffn)]);
  // A heavy player (10 % of all orders go to 10,000 players) and an ordinary one.
  const heavy = 'p0000040'; // heavy players are those (i * 7919) % 10000 with i % 10 = 0: multiples of 10
  const plain = 'p0123457';
  const firstRef = (await adminCall(svc.address, 'GET', `/admin/v1/orders?game_id=scale_g2&limit=1`)).data[0]?.reference_id ?? 'ref-1';
  const o = '/admin/v1/orders?limit=50';
  const queries: [string, string][] = [
    ['orders: no filter', o],
    ['orders: game_id', `${o}&game_id=scale_g1`],
    ['orders: game_id (5 % game)', `${o}&game_id=scale_g4`],
    ['orders: status=created', `${o}&status=created`],
    ['orders: status=paid', `${o}&status=paid`],
    ['orders: status=refunded', `${o}&status=refunded`],
    ['orders: game_id+status=delivered', `${o}&game_id=scale_g2&status=delivered`],
    ['orders: game_id+status=refunded (5 % game)', `${o}&game_id=scale_g4&status=refunded`],
    ['orders: game_id+status=created', `${o}&game_id=scale_g3&status=created`],
    ['orders: combo_id (heavy player)', `${o}&combo_id=${heavy}`],
    ['orders: combo_id', `${o}&combo_id=${plain}`],
    ['orders: game_id+combo_id', `${o}&game_id=scale_g1&combo_id=${heavy}`],
    ['orders: combo_id+status', `${o}&combo_id=${heavy}&status=delivered`],
    ['orders: game_id+combo_id+status', `${o}&game_id=scale_g1&combo_id=${heavy}&status=expired`],
    ['orders: reference_id', `${o}&reference_id=${firstRef}`],
    ['orders: game_id+reference_id', `${o}&game_id=scale_g2&reference_id=${firstRef}`],
    ['orders: unknown reference_id', `${o}&reference_id=nope-0`],
    ['orders: unknown combo_id', `${o}&combo_id=nobody`],
    ['orders: cursor at 50 % depth', `${o}&cursor=${deepOrder(mid)}`],
    ['orders: cursor at 99 % depth', `${o}&cursor=${deepOrder(old)}`],
    ['orders: game_id, cursor at 99 %', `${o}&game_id=scale_g4&cursor=${deepOrder(old)}`],
    ['orders: status=refunded, cursor at 99 %', `${o}&status=refunded&cursor=${deepOrder(old)}`],
    ['orders: game_id+status=paid, cursor at 99 %', `${o}&game_id=scale_g4&status=paid&cursor=${deepOrder(old)}`],
    ['orders: combo_id, cursor at 50 %', `${o}&combo_id=${heavy}&cursor=${deepOrder(mid)}`],
    ['orders: limit=200', `/admin/v1/orders?limit=200`],
  ];
  const deepSession = (t: number) => cursorOf([t, 'scale_g9', 'zzzz']);
  const s = '/admin/v1/sessions?limit=50';
  queries.push(
    ['sessions: no filter', s],
    ['sessions: game_id', `${s}&game_id=scale_g4`],
    ['sessions: combo_id', `${s}&combo_id=${heavy}`],
    ['sessions: game_id+combo_id (with online_days)', `${s}&game_id=scale_g1&combo_id=${heavy}`],
    ['sessions: open=true', `${s}&open=true`],
    ['sessions: open=false', `${s}&open=false`],
    ['sessions: game_id+open=true', `${s}&game_id=scale_g4&open=true`],
    ['sessions: cursor at 99 % depth', `${s}&cursor=${deepSession(old)}`],
    ['sessions: game_id, cursor at 99 %', `${s}&game_id=scale_g4&cursor=${deepSession(old)}`],
  );
  return queries;
}

/** Walks of 100 pages of 200 from the newest, each page timed once, with and without a filter. */
const WALKS: [string, string][] = [
  ['orders: 100 pages of 200 (cursor walk)', '/admin/v1/orders?limit=200'],
  ['orders: game_id+status, 100 pages of 200', '/admin/v1/orders?limit=200&game_id=scale_g4&status=delivered'],
  ['sessions: 100 pages of 200 (cursor walk)', '/admin/v1/sessions?limit=200'],
];

async function listings(svc: Service, kind: string, queries: [string, string][], walks: [string, string][], suffix = ''): Promise<ListTiming[]> {
  const out: ListTiming[] = [];
  const stat = (name: string, ms: number[], rows: number) => {
    const s = [...ms].sort((a, b) => a - b);
    const r = (x: number) => Math.round(x * 10) / 10;
    out.push({ name: name + suffix, rows, p50: r(quantile(s, 0.5)), p99: r(quantile(s, 0.99)), max: r(s[s.length - 1]!) });
  };
  for (const [name, uri] of queries) {
    log(`${kind}: ${name}${suffix}`);
    await timeGet(svc.address, uri, 1); // warm-up (first run of a plan)
    const { ms, body } = await timeGet(svc.address, uri, LIST_RUNS);
    stat(name, ms, body.data.length);
  }
  for (const [name, base] of walks) {
    log(`${kind}: ${name}${suffix}`);
    const ms: number[] = [];
    let cursor: string | null = null;
    let rows = 0;
    for (let p = 0; p < 100; p++) {
      const r: { ms: number[]; body: any } = await timeGet(svc.address, cursor ? `${base}&cursor=${cursor}` : base, 1);
      ms.push(r.ms[0]!);
      rows += r.body.data.length;
      cursor = r.body.next_cursor;
      if (!cursor) break;
    }
    stat(name, ms, rows);
  }
  return out;
}

/**
 * The listings without a game again, with MORE_GAMES empty games added, half of them between the
 * first and second seeded game and half between the second and third in game order: what an
 * operator running hundreds of games gets. The added games are removed again afterwards (by SQL:
 * the admin API deletes no game), so a reused database stays as seeded.
 */
async function manyGamesListings(svc: Service, kind: string, databaseUrl: string, queries: [string, string][]): Promise<ListTiming[]> {
  const half = Math.ceil(MORE_GAMES / 2);
  const added = Array.from({ length: MORE_GAMES }, (_, i) => (i < half ? `scale_g1_m${String(i).padStart(4, '0')}` : `scale_g2_m${String(i).padStart(4, '0')}`));
  log(`${kind}: adding ${MORE_GAMES} empty games...`);
  for (const g of added) await adminCall(svc.address, 'POST', '/admin/v1/games', { game_id: g, name: g });
  try {
    const withoutGame = queries.filter(([name]) => !name.includes('game_id'));
    return await listings(svc, kind, withoutGame, WALKS.filter(([name]) => !name.includes('game_id')), ` (${GAMES.length + MORE_GAMES} games)`);
  } finally {
    // `_` matches any one character: the seeded games (scale_g1..scale_g4) are too short to match.
    const del = ['game_keys', 'games'].map((t) => `delete from ${t} where game_id like 'scale_g1_m%' or game_id like 'scale_g2_m%'`);
    if (kind === 'sqlite') {
      const db = new Database(databaseUrl.slice('sqlite:'.length));
      for (const q of del) db.prepare(q).run();
      db.close();
    } else {
      const c = new pg.Client({ connectionString: databaseUrl });
      await c.connect();
      for (const q of del) await c.query(q);
      await c.end();
    }
  }
}

// ---------------------------------------------------------------------------------------------

async function dropAll(): Promise<void> {
  for (const kind of KINDS) {
    if (kind === 'postgres') {
      await pgAdmin(async (c) => {
        await c.query('DROP DATABASE IF EXISTS combo_scale');
        await c.query('DROP DATABASE IF EXISTS combo_scale_empty');
      });
    } else {
      for (const n of ['combo_scale', 'combo_scale_empty']) for (const s of ['.db', '.db-wal', '.db-shm']) rmSync(path.join(DIR, n + s), { force: true });
    }
    rmSync(path.join(DIR, `combo_scale.${kind}.json`), { force: true }); // the seeded-database marker
    log(`${kind}: dropped the benchmark databases (the report stays in ${DIR})`);
  }
}

async function main() {
  mkdirSync(DIR, { recursive: true });
  const report: string[] = [];
  const line = (s: string) => {
    report.push(s);
    console.log(s);
  };
  for (const kind of KINDS) {
    if (kind !== 'sqlite' && kind !== 'postgres') throw new Error(`SCALE_DB must be sqlite, postgres or both, not ${kind}`);
    const empty = await prepare(kind, false);
    const full = await prepare(kind, true);
    if (process.env.SCALE_SEED_ONLY === '1') continue;
    const svcE = await startService({ DATABASE_URL: empty.databaseUrl, DATA_DIR: DIR, SECRETS_KEY });
    const svcF = await startService({ DATABASE_URL: full.databaseUrl, DATA_DIR: DIR, SECRETS_KEY });
    try {
      const game = 'scale_g1';
      const rows: { what: string; round: number; e: Throughput; f: Throughput }[] = [];
      // Warm-up, not counted: the first seconds on a large file fill the page caches.
      for (const svc of [svcE, svcF]) {
        const secret = (svc === svcE ? empty : full).secrets[game]!;
        log(`${kind}: warm-up ${WARMUP} s (${svc === svcE ? 'empty' : 'full'})...`);
        await autocannon({ url: svc.address, connections, duration: WARMUP, ...requestOptions(createOrders(secret, game)) });
        await autocannon({ url: svc.address, connections, duration: WARMUP, ...requestOptions(enterGames(secret, game)) });
      }
      for (let round = 1; round <= ROUNDS; round++) {
        for (const [what, make] of [
          ['create-order', createOrders],
          ['enter-game', enterGames],
        ] as const) {
          log(`${kind} round ${round}: ${what}, empty database...`);
          const e = await throughput(svcE, make(empty.secrets[game]!, game));
          log(`  ${e.rps} req/s, ${e.cpuUsPerReq} µs/req; full database...`);
          const f = await throughput(svcF, make(full.secrets[game]!, game));
          log(`  ${f.rps} req/s, ${f.cpuUsPerReq} µs/req`);
          rows.push({ what, round, e, f });
        }
      }
      const queries = await listingQueries(svcF);
      const lists = await listings(svcF, kind, queries, WALKS);
      if (MORE_GAMES > 0) lists.push(...(await manyGamesListings(svcF, kind, full.databaseUrl, queries)));
      const rss = rssMb(svcF.child.pid);

      line(`\n## ${kind}: ${ROWS.toLocaleString('en')} orders and ${ROWS.toLocaleString('en')} sessions (${new Date().toISOString()}, ${os.cpus().length} cores, node ${process.version}, ${connections} connections, ${duration} s each)\n`);
      line('| scenario | round | empty req/s | full req/s | full/empty | empty µs/req | full µs/req | empty/full CPU | p99 ms empty / full | non-2xx |');
      line('|---|---|---|---|---|---|---|---|---|---|');
      for (const r of rows) {
        line(`| ${r.what} | ${r.round} | ${r.e.rps} | ${r.f.rps} | ${(r.f.rps / r.e.rps).toFixed(2)} | ${r.e.cpuUsPerReq} | ${r.f.cpuUsPerReq} | ${(r.e.cpuUsPerReq / r.f.cpuUsPerReq).toFixed(2)} | ${r.e.p99} / ${r.f.p99} | ${r.e.non2xx + r.f.non2xx} |`);
      }
      for (const what of ['create-order', 'enter-game']) {
        const rs = rows.filter((r) => r.what === what);
        const ratio = rs.reduce((a, r) => a + r.f.rps, 0) / rs.reduce((a, r) => a + r.e.rps, 0);
        const cpu = rs.reduce((a, r) => a + r.e.cpuUsPerReq, 0) / rs.reduce((a, r) => a + r.f.cpuUsPerReq, 0);
        line(`\n${what}: full/empty throughput ${ratio.toFixed(2)}, CPU per request empty/full ${cpu.toFixed(2)}: ${ratio >= 0.8 ? 'PASS' : 'FAIL'} (target >= 0.80)`);
      }
      line(`\n| listing (full database) | rows | p50 ms | p99 ms | max ms | < 50 ms |`);
      line('|---|---|---|---|---|---|');
      for (const l of lists) line(`| ${l.name} | ${l.rows} | ${l.p50} | ${l.p99} | ${l.max} | ${l.max < 50 ? 'yes' : l.p99 < 50 ? 'p99 yes, max no' : 'NO'} |`);
      const slow = lists.filter((l) => l.p99 >= 50);
      line(`\nlistings: ${slow.length === 0 ? 'PASS' : `FAIL (${slow.map((l) => l.name).join('; ')})`} (target p99 < 50 ms); service RSS after the run ${rss} MB`);
    } finally {
      await svcE.stop();
      await svcF.stop();
    }
  }
  writeFileSync(path.join(DIR, `report-${Date.now()}.md`), report.join('\n') + '\n');
  if (process.env.SCALE_DROP === '1') await dropAll();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
