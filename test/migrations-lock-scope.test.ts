import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATE_LOCK_ID, migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { waitFor } from './helpers/wait.js';

let tdb: TestDatabase | undefined;
let database: Database | undefined;
const clients: pg.Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.end().catch(() => {});
  await database?.close();
  await tdb?.drop();
  database = tdb = undefined;
});
/** A connection of its own to the test's database (ended after the test). */
const client = async () => {
  const c = new pg.Client({ connectionString: tdb!.url });
  await c.connect();
  clients.push(c);
  return c;
};

/**
 * A run of several migrations (an upgrade from 0008: 0009 drops a sessions index, 0010 builds
 * statistics on orders and notifications) must not keep an earlier migration's table lock while
 * a later one waits for its own lock or runs its ANALYZE: sessions' traffic would stall for all
 * of that, not for DATABASE_MIGRATION_LOCK_TIMEOUT_MS at most.
 */
describe.skipIf(TEST_DB !== 'postgres')('a later migration\'s lock wait does not hold an earlier one\'s table lock', () => {
  it('while 0010 waits for orders (held SHARE UPDATE EXCLUSIVE, as by a manual ANALYZE or VACUUM), sessions can be read', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0009')));
    const holder = await client();
    await holder.query('begin');
    await holder.query('lock table orders in share update exclusive mode');
    const run = migrateToLatest(database, migrations, { lockTimeoutMs: 30_000 });
    const observer = await client();
    await waitFor(async () => (await observer.query("select 1 from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'orders' and not l.granted")).rows.length, '0010 to wait for orders');
    const reader = await client();
    await reader.query('set lock_timeout = 1000');
    const read = await reader.query('select count(*)::int as n from sessions').then((r) => r.rows[0], (e: { code?: string }) => ({ error: e.code }));
    await holder.query('rollback');
    const result = await run;
    expect(read).toEqual({ n: 0 });
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(Object.keys(migrations).filter((name) => name >= '0009').map((name) => [name, 'Success']));
  });
});

/**
 * Several instances starting together on one database: a run takes the migration lock before it
 * reads the schema, and holds it across every migration it applies. Kysely reads every table's
 * columns before each migration, and that read fails ("column ... does not exist") when another
 * process's migration drops a column meanwhile.
 */
describe.skipIf(TEST_DB !== 'postgres')('a migration run holds the migration lock from start to end', () => {
  const tryLock = async (c: pg.Client) => (await c.query<{ ok: boolean }>(`select pg_try_advisory_lock(${MIGRATE_LOCK_ID}) as ok`)).rows[0]!.ok;

  it('waits for another run before reading anything, applies every pending migration, then lets go', async () => {
    tdb = await createTestDatabase();
    const other = await client();
    expect(await tryLock(other)).toBe(true);
    database = openDatabase(tdb.url);
    const run = migrateToLatest(database);
    const observer = await client();
    const waiting = "select 1 from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())";
    await waitFor(async () => (await observer.query(waiting)).rows.length, 'the run to wait for the migration lock');
    // Waiting: not even Kysely's own tables exist yet.
    expect((await observer.query("select to_regclass('kysely_migration') as t")).rows[0].t).toBeNull();
    await other.query(`select pg_advisory_unlock(${MIGRATE_LOCK_ID})`);
    const result = await run;
    expect(result.results?.map((r) => r.migrationName)).toEqual(Object.keys(migrations).sort());
    expect(await tryLock(observer)).toBe(true);
  });

  it('an up-to-date database does not wait for the lock; a failed run lets go of it', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database);
    const other = await client();
    expect(await tryLock(other)).toBe(true);
    expect(await migrateToLatest(database)).toEqual({ results: [] });
    await other.query(`select pg_advisory_unlock(${MIGRATE_LOCK_ID})`);
    const failing = { ...migrations, '9999_fails': { up: async () => Promise.reject(new Error('it fails')) } };
    await expect(migrateToLatest(database, failing)).rejects.toThrow('migration 9999_fails failed: it fails');
    expect(await tryLock(other)).toBe(true);
  });
});
