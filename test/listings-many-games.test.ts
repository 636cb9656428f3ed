import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrderAdminStore } from '../src/orders/admin-store.js';
import { SessionStore } from '../src/sessions/store.js';
import { ManualClock } from '../src/lib/clock.js';
import { createOrder } from './helpers/orders.js';
import { enter, pool } from './helpers/nppa-game.js';
import { storeDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { plannedDatabase, type LoggedSqlite } from './helpers/sqlite-plans.js';

// The operator listings without a game read each game's newest rows through a per-game index,
// all games in one statement (src/db/per-game.ts). Here, with hundreds of games, a player has
// orders and sessions in games far apart in game order, many of them at the same millisecond,
// so the tie-break decides their order; paging by cursor must give each row once, in order.

/** Games in the service: past the 200 that the listing once merged in one UNION ALL. */
const GAMES = 250;

const clock = new ManualClock(Date.parse('2026-11-20T10:00:00Z'));
let t: TestService;
let first: TestGame;
let middle: TestGame;
let last: TestGame;

const db = () => t.service.database.db;

/** Every page of `path` at `limit`, following next_cursor. */
async function allPages(path: string, limit: number): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const r = await admin(t, 'GET', `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(r.status).toBe(200);
    expect(r.body.data.length).toBeLessThanOrEqual(limit);
    rows.push(...r.body.data);
    cursor = r.body.next_cursor;
  } while (cursor);
  return rows;
}

describe(`listings without a game, ${GAMES} games`, () => {
  beforeAll(async () => {
    t = await startService({ clock });
    const games: TestGame[] = [];
    await pool(
      Array.from({ length: GAMES }, (_, i) => i),
      8,
      async () => void games.push(await createGame(t)),
    );
    // The first, a middle and the last game in the database's game_id order.
    const order = (await db().selectFrom('games').select('game_id').orderBy('game_id').execute()).map((g) => g.game_id);
    const game = (id: string) => games.find((g) => g.gameId === id)!;
    [first, middle, last] = [game(order[0]!), game(order[GAMES / 2]!), game(order.at(-1)!)];
  }, 120_000);
  afterAll(async () => t?.stop());

  it('orders of a player, newest first across games, by cursor at every page size', async () => {
    // Three moments; at each, orders in games far apart (ties broken by order_id).
    for (let moment = 0; moment < 3; moment++) {
      for (const [i, game] of [last, first, middle, last].entries()) {
        await createOrder(t, game, { combo_id: 'many-games-player', reference_id: `many-games-ref-${moment}-${i}` });
      }
      clock.advance(1_000);
    }
    // What to expect: the database's own sort of the whole table.
    const expected = (
      await db()
        .selectFrom('orders')
        .select('order_id')
        .where('combo_id', '=', 'many-games-player')
        .orderBy('created_at', 'desc')
        .orderBy('order_id', 'desc')
        .execute()
    ).map((o) => o.order_id);
    expect(expected).toHaveLength(12);
    for (const limit of [1, 2, 5, 50]) {
      const rows = await allPages('/admin/v1/orders?combo_id=many-games-player', limit);
      expect(rows.map((r) => r.order_id), `limit ${limit}`).toEqual(expected);
      // No filter at all: every order of the service, which here are these.
      expect((await allPages('/admin/v1/orders', limit)).map((r) => r.order_id), `limit ${limit}, no filter`).toEqual(expected);
    }
    const created = await allPages('/admin/v1/orders?combo_id=many-games-player&status=created', 3);
    expect(created.map((r) => r.order_id)).toEqual(expected);
    expect(await allPages('/admin/v1/orders?combo_id=nobody-at-all', 10)).toEqual([]);
  });

  it('sessions, with and without a player filter, newest first across games', async () => {
    for (let moment = 0; moment < 3; moment++) {
      for (const [i, game] of [middle, last, first].entries()) await enter(t, game, 'many-games-online', `s-${moment}-${i}`);
      clock.advance(1_000);
    }
    const key = (r: { game_id: string; session_id: string }) => `${r.game_id}/${r.session_id}`;
    const expected = (
      await db()
        .selectFrom('sessions')
        .select(['game_id', 'session_id'])
        .orderBy('created_at', 'desc')
        .orderBy('game_id', 'desc')
        .orderBy('session_id', 'desc')
        .execute()
    ).map(key);
    expect(expected).toHaveLength(9);
    for (const limit of [1, 2, 4, 50]) {
      const rows = await allPages('/admin/v1/sessions?combo_id=many-games-online', limit);
      expect(rows.map(key), `limit ${limit}`).toEqual(expected);
      // No filter at all: every session of the service, which here are these.
      expect((await allPages('/admin/v1/sessions', limit)).map(key), `limit ${limit}, no filter`).toEqual(expected);
    }
  });
});

// What SQLite does with a listing across games: one statement that walks the games and reads
// each game's page through an index that starts with game_id, never a scan of the table or of
// its time index (which would read every row at 10 million: docs/benchmarks.md, "Scale").
describe.skipIf(TEST_DB !== 'sqlite')(`listings across ${GAMES} games on SQLite: one statement, an index read per game`, () => {
  let tdb: TestDatabase;
  let sqlite: LoggedSqlite;

  beforeAll(async () => {
    const games = Array.from({ length: GAMES }, (_, i) => `g_${String(i).padStart(3, '0')}`);
    ({ tdb, sqlite } = await plannedDatabase(games, async (db) => {
      for (const [i, g] of [games[0]!, games.at(-1)!].entries()) {
        await sql`insert into orders (order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, amount, currency,
            status, token_secret, created_at, expires_at, updated_at)
          values (${`10${i}`}, ${g}, ${`r${i}`}, 'p', 'gem_60', 'ios', 'https://x.example/n', 1, 600, 'CNY', 'created', 's', 100, 200, 100)`.execute(db);
        await sql`insert into sessions (game_id, session_id, combo_id, entered_at, created_at) values (${g}, ${`s${i}`}, 'p', 100, 100)`.execute(db);
      }
    }));
  });
  afterAll(async () => {
    await sqlite?.kysely.destroy();
    await tdb?.drop();
  });

  /** The plan of the one query `run` sent to `table`, its reads of the table only. */
  const reads = async (run: () => Promise<unknown[]>, table: string): Promise<string[]> => {
    sqlite.seen.length = 0;
    expect(await run()).toHaveLength(2);
    const queries = sqlite.seen.filter((q) => q.sql.includes(`"${table}"`));
    expect(queries).toHaveLength(1);
    const lines = sqlite.plan(queries[0]!);
    expect(lines).toContain('SEARCH m USING INTEGER PRIMARY KEY (rowid=?)');
    return lines.filter((l) => new RegExp(`^(SCAN|SEARCH) ${table}\\b`).test(l));
  };

  it('orders: all, by status', async () => {
    const store = new OrderAdminStore(storeDatabase(sqlite.kysely, 'sqlite'));
    const filters = [{}, { status: 'created' as const }];
    for (const filter of filters) {
      const lines = await reads(() => store.list(filter, null, 50), 'orders');
      expect(lines.length, JSON.stringify(filter)).toBeGreaterThan(0);
      for (const l of lines) expect(l).toMatch(/^SEARCH orders USING (COVERING )?INDEX \w+ \(game_id=\?/);
    }
  });

  it('sessions: all, open', async () => {
    const store = new SessionStore(storeDatabase(sqlite.kysely, 'sqlite'));
    for (const filter of [{ limit: 50 }, { open: true, limit: 50 }]) {
      const lines = await reads(() => store.list(sqlite.kysely, filter), 'sessions');
      expect(lines.length, JSON.stringify(filter)).toBeGreaterThan(0);
      for (const l of lines) expect(l).toMatch(/^SEARCH sessions USING (COVERING )?INDEX \w+ \(game_id=\?/);
    }
  });

  it('orders by player (and status): a range read of the player index per game, and the orders past it by rowid', async () => {
    const store = new OrderAdminStore(storeDatabase(sqlite.kysely, 'sqlite'));
    for (const filter of [{ comboId: 'p' }, { comboId: 'p', status: 'created' as const }]) {
      sqlite.seen.length = 0;
      expect(await store.list(filter, null, 50)).toHaveLength(2);
      const lines = sqlite.plan(sqlite.seen.find((q) => q.sql.includes('order_players'))!);
      expect(lines).toContain('SEARCH p USING PRIMARY KEY (game_id=? AND combo_id=?)');
      expect(lines).toContain('SEARCH s USING INDEX sqlite_autoindex_orders_1 (order_id=?)');
      expect(lines).toContain('SEARCH m USING INTEGER PRIMARY KEY (rowid=?)');
      expect(lines).toContain('SEARCH orders USING INTEGER PRIMARY KEY (rowid>?)');
      expect(lines.filter((l) => /^SCAN (orders|p|s|m)\b/.test(l)), JSON.stringify(filter)).toEqual([]);
    }
  });

  it('sessions by player: a range read of the player index per game, and the sessions past it by rowid', async () => {
    const store = new SessionStore(storeDatabase(sqlite.kysely, 'sqlite'));
    sqlite.seen.length = 0;
    expect(await store.list(sqlite.kysely, { comboId: 'p', limit: 50 })).toHaveLength(2);
    const lines = sqlite.plan(sqlite.seen.find((q) => q.sql.includes('session_players'))!);
    expect(lines).toContain('SEARCH p USING PRIMARY KEY (game_id=? AND combo_id=?)');
    expect(lines).toContain('SEARCH m USING INTEGER PRIMARY KEY (rowid=?)');
    expect(lines).toContain('SEARCH sessions USING INTEGER PRIMARY KEY (rowid>?)');
    expect(lines.filter((l) => /^SCAN (sessions|p|s|m)\b/.test(l))).toEqual([]);
  });
});
