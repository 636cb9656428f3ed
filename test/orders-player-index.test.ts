import SQLite from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ComplianceStore } from '../src/compliance/store.js';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { playerIndexFile } from '../src/db/player-index.js';
import type { OrderStatus } from '../src/db/schema.js';
import { ManualClock } from '../src/lib/clock.js';
import { OrderAdminStore, type OrderCursor } from '../src/orders/admin-store.js';
import { OrderStore, type OrderRow } from '../src/orders/store.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { METRICS_TOKEN, sample } from './helpers/metrics.js';
import { admin, createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';
import { insertGames } from './helpers/sqlite-plans.js';

// A player's orders (the operator's listing with combo_id, a minor's month of spending). On
// SQLite their key by player is kept off the request path, in the file beside the database that
// a worker thread fills (db/player-index.ts); a read takes the file's entries and the orders
// past them. Whatever the worker has reached, the answers must be what one query over the table
// would give.

const GAMES = ['g_a', 'g_b'];
const PLAYERS = ['p1', 'p2', '玩家三'];
const STATUSES: OrderStatus[] = ['created', 'paid', 'delivered', 'expired'];
const MONTH = 1_000_000; // the month's start in these tests (Unix ms)

/** Orders of three players in two games, with ties on created_at, in several statuses. */
function ordersFrom(start: number, n: number): OrderRow[] {
  return Array.from({ length: n }, (_, k) => {
    const i = start + k;
    const createdAt = MONTH - 2_000 + Math.floor(i / 3) * 100; // three orders per instant
    const status = STATUSES[i % 4]!;
    return {
      order_id: `o-${String((i * 7919) % 1000).padStart(3, '0')}-${i}`, // not in insert order
      game_id: GAMES[i % 2]!,
      reference_id: `r-${i}`,
      combo_id: PLAYERS[i % 3]!,
      product_id: 'gem',
      platform: 'ios',
      notify_url: 'https://game.example/n',
      quantity: 1,
      meta: null,
      context: null,
      amount: 100 + i,
      currency: i % 5 === 4 ? 'USD' : 'CNY',
      status,
      token_secret: 's',
      is_sandbox: 0,
      late_payment: 0,
      created_at: createdAt,
      expires_at: createdAt + 1_500,
      updated_at: createdAt,
      paid_at: status === 'paid' || status === 'delivered' ? createdAt + 10 : null,
      delivered_at: status === 'delivered' ? createdAt + 20 : null,
      expired_at: status === 'expired' ? createdAt + 1_500 : null,
      canceled_at: null,
      refunded_at: null,
    };
  });
}

type Filter = { comboId: string; gameId?: string; status?: OrderStatus; after?: OrderCursor };

/** What the listing must give: the rows filtered and sorted in memory. */
function expected(all: OrderRow[], f: Filter): string[] {
  const newer = (r: OrderRow, c: OrderCursor) => r.created_at < c.createdAt || (r.created_at === c.createdAt && r.order_id < c.orderId);
  return all
    .filter((r) => r.combo_id === f.comboId && (f.gameId === undefined || r.game_id === f.gameId))
    .filter((r) => f.status === undefined || r.status === f.status)
    .filter((r) => !f.after || newer(r, f.after))
    .sort((a, b) => b.created_at - a.created_at || (a.order_id < b.order_id ? 1 : -1))
    .map((r) => r.order_id);
}

/** What monthSpending must give (compliance/store.ts), summed in memory. */
function expectedSpending(all: OrderRow[], gameId: string, comboId: string, now: number): { spent: number; reserved: number } {
  let spent = 0;
  let reserved = 0;
  for (const r of all) {
    if (r.game_id !== gameId || r.combo_id !== comboId || r.currency !== 'CNY') continue;
    if (r.status === 'created' && r.expires_at > now) reserved += r.amount;
    if ((r.status === 'paid' || r.status === 'delivered') && r.paid_at !== null && r.paid_at >= MONTH) spent += r.amount;
  }
  return { spent, reserved };
}

const NOW = MONTH + 100;

/** Every player's listing (with and without a game and a status, paged at every size) and month. */
async function checkReads(database: Database, all: OrderRow[]): Promise<void> {
  const store = new OrderAdminStore(database);
  const compliance = new ComplianceStore(database);
  for (const comboId of PLAYERS) {
    for (const gameId of [undefined, ...GAMES]) {
      for (const status of [undefined, 'created' as const, 'paid' as const]) {
        const f = { comboId, gameId, status };
        const ids = async (after: OrderCursor | null, limit: number) => (await store.list(f, after, limit)).map((r) => r.order_id);
        expect(await ids(null, 500), JSON.stringify(f)).toEqual(expected(all, f));
        for (const limit of [1, 2, 5]) {
          const seen: string[] = [];
          let after: OrderCursor | null = null;
          for (;;) {
            const page = await store.list(f, after, limit);
            expect(page.map((r) => r.order_id), JSON.stringify({ ...f, limit, after })).toEqual(expected(all, { ...f, after: after ?? undefined }).slice(0, limit));
            seen.push(...page.map((r) => r.order_id));
            const last = page.at(-1);
            if (page.length < limit || !last) break;
            after = { createdAt: last.created_at, orderId: last.order_id };
          }
          expect(seen, JSON.stringify({ ...f, limit })).toEqual(expected(all, f));
        }
      }
      if (gameId === undefined) continue;
      // Read at the root and inside a write transaction, as the admin view and the purchase guard do.
      expect(await compliance.monthSpending(database.db, gameId, comboId, MONTH, NOW), `${gameId} ${comboId}`).toEqual(expectedSpending(all, gameId, comboId, NOW));
      const inTransaction = await database.transaction((trx) => compliance.monthSpending(trx, gameId, comboId, MONTH, NOW));
      expect(inTransaction, `${gameId} ${comboId} in a transaction`).toEqual(expectedSpending(all, gameId, comboId, NOW));
    }
  }
}

/** A fresh database of the suite's kind for each test, migrated, with GAMES. */
function freshDatabase(): { tdb: TestDatabase; database: Database } {
  const d = {} as { tdb: TestDatabase; database: Database };
  beforeEach(async () => {
    d.tdb = await createTestDatabase();
    d.database = openDatabase(d.tdb.url);
    await migrateToLatest(d.database);
    await insertGames(d.database.db, ...GAMES);
  });
  afterEach(async () => {
    await d.database.close();
    await d.tdb.drop();
  });
  return d;
}

describe('a player\'s orders, whatever the player index has reached', () => {
  const d = freshDatabase();

  const insert = async (rows: OrderRow[]) => {
    const store = new OrderStore(d.database);
    for (const r of rows) await d.database.transaction((trx) => store.insert(trx, r));
  };

  it('none indexed, all, and more past them; a payment after indexing: the listings and the month are exact', async () => {
    const all = ordersFrom(0, 40);
    await insert(all);
    await checkReads(d.database, all); // none indexed (on PostgreSQL: its own index)
    if (TEST_DB !== 'sqlite') return;
    // The worker never runs by its timer here: each pass is asked for.
    const indexer = d.database.startPlayerIndexer!({ intervalMs: 3_600_000 });
    expect((await indexer.pass()).orders).toEqual({ indexed: 40, through: 40 });
    await checkReads(d.database, all);
    const more = ordersFrom(40, 17);
    await insert(more);
    await checkReads(d.database, [...all, ...more]); // indexed, and a tail past them
    // A payment after indexing changes only the orders row: the status and the month follow it.
    const paid = all.find((r) => r.status === 'created' && r.currency === 'CNY')!;
    await d.database.db.updateTable('orders').set({ status: 'paid', paid_at: NOW }).where('order_id', '=', paid.order_id).execute();
    const now = [...all, ...more].map((r) => (r === paid ? { ...r, status: 'paid' as const, paid_at: NOW } : r));
    await checkReads(d.database, now);
    expect((await indexer.pass()).orders).toEqual({ indexed: 17, through: 57 });
    await checkReads(d.database, now);
  });

  it('inside a write transaction, the orders written earlier in it count, whatever the worker indexes meanwhile', async () => {
    const all = ordersFrom(0, 12);
    await insert(all);
    const compliance = new ComplianceStore(d.database);
    const store = new OrderStore(d.database);
    const indexer = TEST_DB === 'sqlite' ? d.database.startPlayerIndexer!({ intervalMs: 3_600_000 }) : undefined;
    await indexer?.pass();
    const more = ordersFrom(12, 6).map((r) => ({ ...r, status: 'created' as const, paid_at: null, delivered_at: null, expired_at: null, expires_at: NOW + 1_000 }));
    const seen = await d.database.transaction(async (trx) => {
      for (const r of more) await store.insert(trx, r);
      return compliance.monthSpending(trx, 'g_a', 'p1', MONTH, NOW);
    });
    expect(seen).toEqual(expectedSpending([...all, ...more], 'g_a', 'p1', NOW));
    if (indexer) expect((await indexer.pass()).orders).toEqual({ indexed: 6, through: 18 });
    await checkReads(d.database, [...all, ...more]);
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('the orders in the player index file (SQLite)', () => {
  const d = freshDatabase();

  it('a file whose order at `through` is another is emptied of orders and filled again; its sessions are kept', async () => {
    const all = ordersFrom(0, 12);
    const store = new OrderStore(d.database);
    for (const r of all) await d.database.transaction((trx) => store.insert(trx, r));
    const indexer = d.database.startPlayerIndexer!({ intervalMs: 3_600_000 });
    await indexer.pass();
    // As if the d.database had been replaced by another one (a restored backup) under the file.
    const file = playerIndexFile(d.tdb.url.slice('sqlite:'.length));
    const db = new SQLite(file);
    db.prepare(`update order_progress set order_id = 'another'`).run();
    db.prepare(`insert into order_players values ('g_a', 'p1', 1, 'ghost')`).run();
    db.close();
    const resets: unknown[] = [];
    indexer.on('reset', (table: string) => resets.push(table));
    const pass = await indexer.pass();
    expect(pass.orders).toEqual({ indexed: 12, through: 12 });
    expect(pass.sessions).toEqual({ indexed: 0, through: 0 });
    expect(resets).toEqual(['orders']);
    await checkReads(d.database, all);
    // At start, before the worker's first pass, as for sessions.
    const again = new SQLite(file);
    again.prepare(`update order_progress set order_id = 'another'`).run();
    again.close();
    await d.database.close();
    d.database = openDatabase(d.tdb.url);
    d.database.startPlayerIndexer!({ intervalMs: 3_600_000 });
    const check = new SQLite(file, { readonly: true });
    expect(check.prepare('select count(*) as n from order_players').get()).toEqual({ n: 0 });
    check.close();
    await checkReads(d.database, all);
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('a minor\'s orders in the service, before and after the worker indexed them (SQLite)', () => {
  let t: TestService;
  const clock = new ManualClock(Date.parse('2026-11-20T12:00:00+08:00'));
  beforeEach(async () => {
    t = await startService({ clock, env: { METRICS_TOKEN } });
  });
  afterEach(async () => t?.stop());

  it('the month\'s limit counts every order, indexed or not; the listing by player shows them; /metrics counts them', async () => {
    const game = await createGame(t);
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/p3000`, { name: 'p3000', price: 3000, currency: 'CNY' })).status).toBe(200);
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/players/kid`, { birth_date: '2016-01-01' })).status).toBe(200); // 20000 a month
    const order = () => signed(t, game, 'POST', '/v1/server/create-order', orderBody({ combo_id: 'kid', product_id: 'p3000' }));
    const indexer = t.service.database.playerIndexer!;
    for (let i = 0; i < 3; i++) expect((await order()).status).toBe(200);
    expect((await indexer.pass()).orders.through).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < 3; i++) expect((await order()).status).toBe(200); // 18000: three indexed, three past them
    const refused = await order();
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('recharge_limit_exceeded');
    const listed = await admin(t, 'GET', `/admin/v1/orders?game_id=${game.gameId}&combo_id=kid`);
    expect(listed.body.data).toHaveLength(6);
    const player = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/kid`);
    expect(player.body.spending).toMatchObject({ paid: 0, reserved: 18000, remaining: 2000 });
    await indexer.pass();
    expect((await order()).status).toBe(403);
    // The worker's own pass (every second) may have indexed some first: each order is counted once.
    const text = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(sample(text, 'combo_sqlite_player_index_orders_total')).toBe(6);
  });
});
