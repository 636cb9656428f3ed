import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase } from '../src/db/index.js';
import { inIndexOrder } from '../src/db/planner.js';
import type { DB } from '../src/db/schema.js';
import { NotificationStore } from '../src/notifications/store.js';
import { OrderAdminStore } from '../src/orders/admin-store.js';
import { SessionStore } from '../src/sessions/store.js';
import { createTestDatabase, storeDatabase, TEST_DB, type TestDatabase, testPool } from './helpers/db.js';
import { insertGames } from './helpers/sqlite-plans.js';

// What PostgreSQL plans for the operator listings filtered by status when the statistics are
// stale: they were gathered when no order was `created` (nor notification `pending`), and a
// burst of them came since. Estimating one row, the planner would read every such row of every
// game out of the (status, ...) index, then sort; the listing runs with sorts priced out
// (src/db/planner.ts), so each game's page is read in order from the index that starts
// (game_id, status). Also the sessions listing
// without a filter, whose open page was gathered from the open index and sorted.

const BURST = 4000;

describe.skipIf(TEST_DB !== 'postgres')('status listings on PostgreSQL with stale statistics: each game\'s page read in order', () => {
  let tdb: TestDatabase;
  let kysely: Kysely<DB>;
  const seen: CompiledQuery[] = [];

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const database = openDatabase(tdb.url);
    await migrateToLatest(database);
    await insertGames(database.db, 'g_a', 'g_b', 'g_c');
    const order = (i: number, game: string, status: string) =>
      sql`(${`o${i}`}, ${game}, ${`r${i}`}, ${`p${i % 50}`}, 'gem_60', 'ios', 'https://x.example/n', 1, 600, 'CNY', ${status}, 's', ${i}, ${i + 1800_000}, ${i})`;
    const insertOrders = (rows: ReturnType<typeof order>[]) =>
      sql`insert into orders (order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, amount, currency,
          status, token_secret, created_at, expires_at, updated_at) values ${sql.join(rows)}`.execute(database.db);
    const note = (i: number, game: string, status: string) =>
      sql`(${`n${i}`}, ${`o${i}`}, ${game}, 'ship_order', 'https://x.example/n', '{}', ${status}, 0, ${i}, 0, ${i}, ${i})`;
    const insertNotes = (rows: ReturnType<typeof note>[]) =>
      sql`insert into notifications (notification_id, order_id, game_id, type, notify_url, body, status, attempts, next_attempt_at, locked_until, created_at, updated_at)
          values ${sql.join(rows)}`.execute(database.db);
    // Statistics taken when every order is delivered and every notification succeeded...
    const games = ['g_a', 'g_b', 'g_c'];
    await insertOrders(Array.from({ length: BURST }, (_, i) => order(i, games[i % 3]!, 'delivered')));
    await insertNotes(Array.from({ length: BURST }, (_, i) => note(i, games[i % 3]!, 'succeeded')));
    await sql`analyze orders`.execute(database.db);
    await sql`analyze notifications`.execute(database.db);
    // ...then a burst of new orders and pending notifications in one game.
    await insertOrders(Array.from({ length: BURST }, (_, i) => order(BURST + i, 'g_a', 'created')));
    await insertNotes(Array.from({ length: BURST }, (_, i) => note(BURST + i, 'g_a', 'pending')));
    await database.close();
    kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: testPool({ connectionString: tdb.url, max: 2 }) }), log: (e) => void (e.level === 'query' && seen.push(e.query)) });
  });
  afterAll(async () => {
    await kysely?.destroy();
    await tdb?.drop();
  });

  /**
   * The plan of the listing query `run` sent to `table`, as EXPLAIN's text lines, planned as the
   * listing was: in a transaction that set the planner's knobs first (src/db/planner.ts).
   */
  const plan = async (run: () => Promise<unknown[]>, table: string, expectedRows: number): Promise<string> => {
    seen.length = 0;
    expect(await run()).toHaveLength(expectedRows);
    const sent = seen.map((q) => q.sql.toLowerCase());
    const listing = seen.findIndex((q) => q.sql.includes(`from "${table}"`));
    expect(listing).toBeGreaterThan(0);
    expect(sent.slice(0, listing)).toEqual(expect.arrayContaining(['begin', 'set local enable_sort = off', 'set local enable_incremental_sort = off', 'set local jit = off']));
    const query = seen[listing]!;
    return inIndexOrder(true, kysely, async (trx) => {
      const r = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN ${query.sql}`, [...query.parameters]));
      return r.rows.map((row) => row['QUERY PLAN']).join('\n');
    });
  };

  it('orders of one game by status: an index read of (game_id, status, created_at), not every created order', async () => {
    const store = new OrderAdminStore(storeDatabase(kysely, 'postgres'));
    for (const [gameId, rows] of [['g_b', 0], ['g_a', 50]] as const) {
      const text = await plan(() => store.list({ gameId, status: 'created' }, null, 50), 'orders', rows);
      expect(text, text).toMatch(/Index Scan Backward using orders_game_status_created on orders/);
      expect(text, text).not.toContain('orders_status_expires');
    }
  });

  it('orders by status across games: each game\'s page from that index', async () => {
    const store = new OrderAdminStore(storeDatabase(kysely, 'postgres'));
    const text = await plan(() => store.list({ status: 'created' }, null, 50), 'orders', 50);
    // The sort priced out costs 10^10: no JIT compilation for it.
    expect(text, text).not.toContain('JIT');
    expect(text, text).toMatch(/Index Scan Backward using orders_game_status_created on orders/);
    expect(text, text).not.toContain('orders_status_expires');
  });

  it('orders without a filter across games: each game\'s page read backward from (game_id, created_at, order_id)', async () => {
    const store = new OrderAdminStore(storeDatabase(kysely, 'postgres'));
    seen.length = 0;
    expect(await store.list({}, null, 50)).toHaveLength(50);
    const query = seen.find((q) => q.sql.includes('from "orders"'))!;
    const r = await kysely.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN ${query.sql}`, [...query.parameters]));
    const text = r.rows.map((row) => row['QUERY PLAN']).join('\n');
    // A page of at most 50 per game, read in order; the one sort is the merge of those pages.
    expect(text, text).toMatch(/->\s+Limit\s.*\n\s+->\s+Index Scan Backward using orders_game_created_at on orders/);
    expect(text, text).not.toContain('Seq Scan on orders');
  });

  it('sessions without a filter, past a cursor: the open and closed indexes read backward per game, nothing gathered', async () => {
    await sql`insert into sessions (game_id, session_id, combo_id, entered_at, left_at, close_reason, created_at)
      select (array['g_a','g_b','g_c'])[1 + i % 3], 's' || i, 'p' || (i % 500), i, case when i % 4 = 0 then null else i + 10 end,
             case when i % 4 = 0 then null else 'leave' end, i
      from generate_series(1, ${BURST * 3}) i`.execute(kysely);
    await sql`analyze sessions`.execute(kysely);
    const store = new SessionStore(storeDatabase(kysely, 'postgres'));
    const after = { createdAt: BURST * 2, gameId: 'g_b', sessionId: 's' };
    const text = await plan(() => store.list(kysely, { limit: 50, after }), 'sessions', 50);
    for (const index of ['sessions_open_created', 'sessions_closed_created']) expect(text, text).toContain(`Index Scan Backward using ${index} on sessions`);
    expect(text, text).not.toMatch(/Bitmap/);
    expect(text, text).not.toContain('JIT');
  });

  it('notifications of one game by status: (game_id, status, notification_id), not every pending one', async () => {
    const store = new NotificationStore(storeDatabase(kysely, 'postgres'));
    for (const [gameId, rows] of [['g_b', 0], ['g_a', 50]] as const) {
      const text = await plan(() => store.list({ gameId, status: 'pending', limit: 50 }), 'notifications', rows);
      expect(text, text).toMatch(/Index Scan Backward using notifications_game on notifications/);
      expect(text, text).not.toContain('notifications_due');
    }
  });
});
