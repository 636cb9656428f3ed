import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

/** 0014: orders.request_hash, written '' by every create-order and read by nothing, goes. */
describe('migration 0018_orders_drop_request_hash', () => {
  let tdb: TestDatabase | undefined;
  let database: Database | undefined;
  afterEach(async () => {
    await database?.close();
    await tdb?.drop();
    database = tdb = undefined;
  });

  const columns = async () => (await database!.db.introspection.getTables()).find((t) => t.name === 'orders')!.columns.map((c) => c.name);

  it('drops the column and keeps every order and its other columns', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    const before = Object.keys(migrations).filter((name) => name < '0018_orders_drop_request_hash');
    await migrateToLatest(database, Object.fromEntries(before.map((name) => [name, migrations[name]!])));
    expect(await columns()).toContain('request_hash');
    await sql`insert into games (game_id, name, iap_enabled, sandbox_payments, order_ttl_seconds, rate_limit_per_second, created_at, updated_at)
      values ('g', 'G', 1, 1, 1800, 1000, 1, 1)`.execute(database.db);
    await sql`insert into orders (order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, meta, amount, currency,
        status, token_secret, request_hash, created_at, expires_at, updated_at)
      values ('1', 'g', 'ref-00000001', 'p', 'gem_60', 'ios', 'https://x.example/n', 2, '{"zone_id":"z"}', 1200, 'CNY', 'paid', 'sec', 'legacy-hash', 10, 20, 30),
             ('2', 'g', 'ref-00000002', 'p', 'gem_60', 'android', 'https://x.example/n', 1, null, 600, 'CNY', 'created', 'sec2', '', 11, 21, 31)`.execute(database.db);

    const result = await migrateToLatest(database);
    expect(result.results?.map((r) => [r.migrationName, r.status])).toContainEqual(['0018_orders_drop_request_hash', 'Success']);
    expect(await columns()).not.toContain('request_hash');
    const rows = await database.db.selectFrom('orders').select(['order_id', 'reference_id', 'platform', 'quantity', 'meta', 'amount', 'status', 'token_secret', 'created_at', 'expires_at', 'updated_at']).orderBy('order_id').execute();
    expect(rows).toEqual([
      { order_id: '1', reference_id: 'ref-00000001', platform: 'ios', quantity: 2, meta: '{"zone_id":"z"}', amount: 1200, status: 'paid', token_secret: 'sec', created_at: 10, expires_at: 20, updated_at: 30 },
      { order_id: '2', reference_id: 'ref-00000002', platform: 'android', quantity: 1, meta: null, amount: 600, status: 'created', token_secret: 'sec2', created_at: 11, expires_at: 21, updated_at: 31 },
    ]);
    // The indexes on orders are all still there (SQLite rebuilds the table to drop a column).
    const unique = await sql`insert into orders (order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, amount, currency,
        status, token_secret, created_at, expires_at, updated_at)
      values ('3', 'g', 'ref-00000001', 'p', 'gem_60', 'ios', 'https://x.example/n', 1, 600, 'CNY', 'created', 's', 1, 2, 3)`.execute(database.db).then(() => 'inserted', (e: Error) => e.message);
    expect(unique).toMatch(/unique|duplicate/i);
  });
});
