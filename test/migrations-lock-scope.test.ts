import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';

/**
 * A run of several migrations (an upgrade from 0008: 0009 drops a sessions index, 0010 builds
 * statistics on orders and notifications) must not keep an earlier migration's table lock while
 * a later one waits for its own lock or runs its ANALYZE: sessions' traffic would stall for all
 * of that, not for DATABASE_MIGRATION_LOCK_TIMEOUT_MS at most.
 */
describe.skipIf(TEST_DB !== 'postgres')('a later migration\'s lock wait does not hold an earlier one\'s table lock', () => {
  let tdb: TestDatabase | undefined;
  let database: Database | undefined;
  const clients: pg.Client[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end().catch(() => {});
    await database?.close();
    await tdb?.drop();
    database = tdb = undefined;
  });
  const client = async () => {
    const c = new pg.Client({ connectionString: tdb!.url });
    await c.connect();
    clients.push(c);
    return c;
  };

  it('while 0010 waits for orders (held SHARE UPDATE EXCLUSIVE, as by a manual ANALYZE or VACUUM), sessions can be read', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0009')));
    const holder = await client();
    await holder.query('begin');
    await holder.query('lock table orders in share update exclusive mode');
    const run = migrateToLatest(database, migrations, { lockTimeoutMs: 30_000 });
    const observer = await client();
    for (;;) {
      const { rows } = await observer.query("select 1 from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'orders' and not l.granted");
      if (rows.length) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const reader = await client();
    await reader.query('set lock_timeout = 1000');
    const read = await reader.query('select count(*)::int as n from sessions').then((r) => r.rows[0], (e: { code?: string }) => ({ error: e.code }));
    await holder.query('rollback');
    const result = await run;
    expect(read).toEqual({ n: 0 });
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(Object.keys(migrations).filter((name) => name >= '0009').map((name) => [name, 'Success']));
  });
});
