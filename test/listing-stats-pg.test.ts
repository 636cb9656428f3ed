import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { inIndexOrder } from '../src/db/planner.js';
import type { DB } from '../src/db/schema.js';
import { NotificationStore } from '../src/notifications/store.js';
import { OrderAdminStore } from '../src/orders/admin-store.js';
import { createTestDatabase, storeDatabase, TEST_DB, type TestDatabase, testPool } from './helpers/db.js';
import { insertGames } from './helpers/sqlite-plans.js';

// A status common in the table but absent from one large game, with fresh statistics: without
// statistics on (game_id, status) PostgreSQL multiplies the two columns' frequencies, expects
// the status in thousands of that game's rows, and looks for the listing's first page by
// walking a time index in the listing's order (here the table's own, (created_at, order_id),
// or the notifications' primary key), reading every row of it; the (game_id, status, ...)
// index finds nothing at once. Migration 0010 creates the statistics and analyses the two
// columns.
//
// 10,000 rows of each. The walk's estimated cost is under the right index's from 1,000 rows on
// (orders: by 5 % at 1,000, 10 % at 3,000, 12 % at 10,000, 13 % at 30,000; notifications: by
// 40 % or more), and 10,000 is where that margin stops growing. Fewer rows than ANALYZE
// samples, so its statistics are exact: the plans do not depend on a random sample.

const ROWS = 10_000;
const BEFORE_0010 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0010'));
const THROUGH_0010 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name <= '0010_listing_status_statistics'));

describe.skipIf(TEST_DB !== 'postgres')('a game\'s listing by a status it has none of, common in other games (PostgreSQL)', () => {
  let tdb: TestDatabase;
  let kysely: Kysely<DB>;
  const seen: CompiledQuery[] = [];
  const without: { orders?: string; notifications?: string } = {};

  /** EXPLAIN of the listing query `run` sent to `table`, planned as the listing was (src/db/planner.ts). */
  const plan = async (run: () => Promise<unknown[]>, table: string): Promise<string> => {
    seen.length = 0;
    expect(await run()).toEqual([]);
    const query = seen.find((q) => q.sql.includes(`from "${table}"`));
    expect(query).toBeDefined();
    return inIndexOrder(true, kysely, async (trx) => {
      const r = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN ${query!.sql}`, [...query!.parameters]));
      return r.rows.map((row) => row['QUERY PLAN']).join('\n');
    });
  };
  const listOrders = () => new OrderAdminStore(storeDatabase(kysely, 'postgres')).list({ gameId: 'g_a', status: 'created' }, null, 50);
  const listNotifications = () => new NotificationStore(storeDatabase(kysely, 'postgres')).list({ gameId: 'g_a', status: 'succeeded', limit: 50 });

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const database = openDatabase(tdb.url);
    await migrateToLatest(database, BEFORE_0010);
    await insertGames(database.db, 'g_a', 'g_b', 'g_c', 'g_d', 'g_e');
    // g_a: 15.2 % of the rows, newest first interleaved with the others'. Its orders are
    // delivered, expired, paid or canceled, never created nor refunded; the other games' are
    // 60 % created (51 % of the table) and 25 % refunded. Its notifications fail (none
    // succeeded); the other games' succeed (95 %, 81 % of the table).
    const rows = sql.raw(`from (select i, case when i % 125 < 19 then 'g_a' else (array['g_b','g_c','g_d','g_e'])[1 + (i * 37) % 4] end as game,
        ((i::bigint * 2654435761) / 1000000) % 100 as st from generate_series(1, ${ROWS}) i) s`);
    await sql`insert into orders (order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, amount, currency,
        status, token_secret, request_hash, created_at, expires_at, updated_at)
      select lpad(i::text, 12, '0'), game, 'ref-' || i, 'p' || (i * 7919 % 100000), 'gem_60', 'android', 'https://' || game || '.example.com/notify', 1, 600, 'CNY',
        case when game = 'g_a' then case when st < 60 then 'delivered' when st < 95 then 'expired' when st < 98 then 'paid' else 'canceled' end
             else case when st < 60 then 'created' when st < 85 then 'refunded' when st < 90 then 'delivered' when st < 95 then 'expired' when st < 98 then 'canceled' else 'paid' end end,
        md5(i::text), substr(md5(i::text) || md5(i::text), 1, 43), 1700000000000 + i * 1000, 1700000000000 + i * 1000 + 1800000, 1700000000000 + i * 1000
      ${rows}`.execute(database.db);
    await sql`insert into notifications (notification_id, order_id, game_id, type, notify_url, body, status, attempts, next_attempt_at, locked_until, created_at, updated_at)
      select lpad(i::text, 12, '0'), lpad(i::text, 12, '0'), game, 'ship_order', 'https://' || game || '.example.com/notify',
        '{"order_id":"' || lpad(i::text, 12, '0') || '","amount":600,"currency":"CNY","product_id":"gem_60","quantity":1}',
        case when game = 'g_a' then case when st < 70 then 'failed' when st < 95 then 'gone' else 'pending' end
             else case when st < 95 then 'succeeded' when st < 98 then 'failed' when st < 99 then 'pending' else 'gone' end end,
        1, 1700000000000 + i * 1000, 0, 1700000000000 + i * 1000, 1700000000000 + i * 1000
      ${rows}`.execute(database.db);
    await sql`analyze orders`.execute(database.db);
    await sql`analyze notifications`.execute(database.db);
    kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: testPool({ connectionString: tdb.url, max: 2 }) }), log: (e) => void (e.level === 'query' && seen.push(e.query)) });
    // The plans with fresh statistics but without 0010's; then 0010, which analyses the columns itself.
    without.orders = await plan(listOrders, 'orders');
    without.notifications = await plan(listNotifications, 'notifications');
    await migrateToLatest(database);
    await database.close();
  });
  afterAll(async () => {
    await kysely?.destroy();
    await tdb?.drop();
  });

  it('without 0010\'s statistics the listings walk a time index, reading every row: the scenario shows the misplan', () => {
    // If this fails, the planner no longer makes the mistake here and the tests below prove nothing.
    expect(without.orders, without.orders).toMatch(/Index Scan Backward using (orders_created|orders_game_created_at) on orders/);
    expect(without.orders, without.orders).not.toContain('orders_game_status_created');
    expect(without.notifications, without.notifications).toMatch(/Index Scan Backward using notifications_pkey on notifications/);
    expect(without.notifications, without.notifications).not.toContain('notifications_game');
  });

  it('orders of g_a by created, after 0010: an index read of (game_id, status, created_at, order_id)', async () => {
    const text = await plan(listOrders, 'orders');
    expect(text, text).toMatch(/Index Scan Backward using orders_game_status_created on orders\s+\(cost=[^)]* rows=1 /);
    expect(text, text).toMatch(/Index Cond: \(\(game_id = 'g_a'::text\) AND \(status = 'created'::text\)\)/);
    expect(text, text).not.toContain('Filter');
  });

  it('notifications of g_a by succeeded, after 0010: an index read of (game_id, status, notification_id)', async () => {
    const text = await plan(listNotifications, 'notifications');
    expect(text, text).toMatch(/Index Scan Backward using notifications_game on notifications\s+\(cost=[^)]* rows=1 /);
    expect(text, text).toMatch(/Index Cond: \(\(game_id = 'g_a'::text\) AND \(status = 'succeeded'::text\)\)/);
    expect(text, text).not.toContain('Filter');
  });
});

describe('migration 0010: statistics on (game_id, status) on PostgreSQL, nothing on SQLite', () => {
  let tdb: TestDatabase | undefined;
  let database: Database | undefined;
  afterEach(async () => {
    await database?.close();
    await tdb?.drop();
    database = tdb = undefined;
  });

  it.runIf(TEST_DB === 'postgres')('creates orders_game_status and notifications_game_status (mcv, target 1000), built by its own ANALYZE', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, BEFORE_0010);
    await insertGames(database.db, 'g_a', 'g_b');
    await sql`insert into orders (order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, amount, currency, status,
        token_secret, request_hash, created_at, expires_at, updated_at)
      select 'o' || i, case when i % 2 = 0 then 'g_a' else 'g_b' end, 'r' || i, 'p', 'gem_60', 'ios', 'https://x.example/n', 1, 600, 'CNY',
        case when i % 2 = 0 then 'delivered' else 'created' end, 's', 'h', i, i + 1800000, i
      from generate_series(1, 100) i`.execute(database.db);
    const result = await migrateToLatest(database, THROUGH_0010);
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual([['0010_listing_status_statistics', 'Success']]);
    const { rows } = await sql<{ table: string; name: string; kind: string[] | string; target: number; columns: string; mcv: boolean }>`
      select s.stxrelid::regclass::text as table, s.stxname as name, s.stxkind as kind, s.stxstattarget as target,
             (select string_agg(a.attname, ',' order by a.attnum) from pg_attribute a where a.attrelid = s.stxrelid and a.attnum = any (s.stxkeys)) as columns,
             d.stxdmcv is not null as mcv
      from pg_statistic_ext s left join pg_statistic_ext_data d on d.stxoid = s.oid
      where s.stxnamespace = current_schema()::regnamespace order by s.stxname`.execute(database.db);
    expect(rows.map((r) => ({ ...r, kind: String(r.kind).replace(/[{}]/g, '') }))).toEqual([
      // notifications is empty: its statistics are built at its first ANALYZE with rows.
      { table: 'notifications', name: 'notifications_game_status', kind: 'm', target: 1000, columns: 'game_id,status', mcv: false },
      { table: 'orders', name: 'orders_game_status', kind: 'm', target: 1000, columns: 'game_id,status', mcv: true },
    ]);
    const { rows: items } = await sql<{ values: string[]; frequency: number }>`
      select m.values, m.frequency from pg_statistic_ext s join pg_statistic_ext_data d on d.stxoid = s.oid, pg_mcv_list_items(d.stxdmcv) m
      where s.stxname = 'orders_game_status' order by m.values`.execute(database.db);
    expect(items).toEqual([
      { values: ['g_a', 'delivered'], frequency: 0.5 },
      { values: ['g_b', 'created'], frequency: 0.5 },
    ]);
  });

  it.runIf(TEST_DB === 'sqlite')('changes nothing in an SQLite database', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, BEFORE_0010);
    const schema = () => sql<{ type: string; name: string; sql: string | null }>`select type, name, sql from sqlite_master order by type, name`.execute(database!.db);
    const before = (await schema()).rows;
    const result = await migrateToLatest(database, THROUGH_0010);
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual([['0010_listing_status_statistics', 'Success']]);
    expect((await schema()).rows).toEqual(before);
  });
});
