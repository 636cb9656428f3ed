/**
 * The databases of `npm run bench:scale`: `combo_scale` (seeded) and `combo_scale_empty`, as
 * SQLite files in DIR or PostgreSQL databases at PG_URL.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { adminCall, startService } from './lib.js';
import { GAMES, PRODUCTS } from './scale-rows.js';
import { seedPostgres, seedSqlite } from './scale-seed.js';
import { DIR, KINDS, PG_URL, REUSE, ROWS, SECRETS_KEY, log, secondsSince } from './scale-settings.js';

export interface Setup {
  databaseUrl: string;
  secrets: Record<string, string>;
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
export async function prepare(kind: string, full: boolean): Promise<Setup> {
  const name = full ? `combo_scale` : `combo_scale_empty`;
  const sqliteFile = path.join(DIR, `${name}.db`);
  const databaseUrl = kind === 'sqlite' ? `sqlite:${sqliteFile}` : `${PG_URL}/${name}`;
  const marker = path.join(DIR, `${name}.${kind}.json`);
  const reused = full && REUSE ? reusable(kind, marker, databaseUrl) : undefined;
  if (reused) return reused;
  rmSync(marker, { force: true });
  await recreate(kind, name, sqliteFile);
  const secrets = await createGames(databaseUrl);
  if (full) {
    const t = Date.now();
    log(`${kind}: seeding ${ROWS} orders and ${ROWS} sessions...`);
    if (kind === 'sqlite') seedSqlite(sqliteFile);
    else await seedPostgres(databaseUrl);
    log(`${kind}: seeded in ${secondsSince(t, 0)} s`);
  }
  const setup = { databaseUrl, secrets };
  if (full) writeFileSync(marker, JSON.stringify({ ...setup, rows: ROWS }));
  return setup;
}

/** The setup a seeded database of an earlier run left in `marker`, if it has SCALE_ROWS rows. */
function reusable(kind: string, marker: string, databaseUrl: string): Setup | undefined {
  if (!existsSync(marker)) return undefined;
  const m = JSON.parse(readFileSync(marker, 'utf8')) as Setup & { rows: number };
  if (m.rows !== ROWS) return undefined;
  log(`${kind}: reusing the seeded database ${databaseUrl} (${ROWS} rows)`);
  return m;
}

/** The database `name`, new and empty (not even migrated). */
async function recreate(kind: string, name: string, sqliteFile: string): Promise<void> {
  if (kind === 'sqlite') {
    for (const s of ['', '-wal', '-shm', '-player-index', '-player-index-wal', '-player-index-shm']) rmSync(sqliteFile + s, { force: true });
  } else {
    await pgAdmin(async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${name}`);
      await c.query(`CREATE DATABASE ${name}`);
    });
  }
}

/** Resolves to the secret key of each game in GAMES. */
async function createGames(databaseUrl: string): Promise<Record<string, string>> {
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
  return secrets;
}

export async function dropAll(): Promise<void> {
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
