import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { SessionStore, type SessionRow } from '../src/sessions/store.js';
import { createTestDatabase, storeDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { insertGames, plannedDatabase, type LoggedSqlite } from './helpers/sqlite-plans.js';

// Open and closed sessions each have their own per-game index (migration
// 0005_sessions_open_closed_indexes): the operator's open=true / open=false listings and the
// timeout sweep read them, on a real database of the suite's kind.

const session = (gameId: string, sessionId: string, createdAt: number, leftAt: number | null): SessionRow => ({
  game_id: gameId,
  session_id: sessionId,
  combo_id: `p-${sessionId}`,
  entered_at: createdAt,
  left_at: leftAt,
  close_reason: leftAt === null ? null : 'leave',
  created_at: createdAt,
});

const addGames = (database: Database, ...ids: string[]) => insertGames(database.db, ...ids);

const ids = (rows: SessionRow[]) => rows.map((r) => r.session_id);

describe('sessions: open and closed indexes', () => {
  let tdb: TestDatabase;
  let database: Database;
  let store: SessionStore;

  beforeEach(async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
  });
  afterEach(async () => {
    await database.close();
    await tdb.drop();
  });

  const seed = async () => {
    await addGames(database, 'g_a', 'g_b');
    store = new SessionStore(database);
    const rows = [
      session('g_a', 'a-old-open', 100, null),
      session('g_a', 'a-old-closed', 110, 500),
      session('g_b', 'b-old-open', 120, null),
      session('g_a', 'a-mid-open', 200, null),
      session('g_b', 'b-new-open', 900, null),
      session('g_b', 'b-new-closed', 950, 960),
      // A leave with no enter: created closed, never swept.
      { ...session('g_b', 'b-leave-only', 130, 130), entered_at: null },
    ];
    for (const r of rows) await store.insert(database.db, r);
  };

  it('the timeout sweep takes the oldest open sessions across games, and none that is closed or too new', async () => {
    await migrateToLatest(database);
    await seed();
    expect(ids(await store.findExpired(database.db, 300, 10))).toEqual(['a-old-open', 'b-old-open', 'a-mid-open']);
    expect(ids(await store.findExpired(database.db, 300, 2))).toEqual(['a-old-open', 'b-old-open']);
    expect(ids(await store.findExpired(database.db, 99, 10))).toEqual([]);
    // A closed session leaves the open index: the next sweep no longer sees it.
    expect(await store.close(database.db, 'g_a', 'a-old-open', 400, 'timeout')).toBe(true);
    expect(ids(await store.findExpired(database.db, 300, 10))).toEqual(['b-old-open', 'a-mid-open']);
  });

  it('the timeout sweep takes the oldest open sessions first across hundreds of games', async () => {
    await migrateToLatest(database);
    const games = Array.from({ length: 250 }, (_, i) => `g_${String(i).padStart(3, '0')}`);
    await addGames(database, ...games);
    store = new SessionStore(database);
    await store.insert(database.db, session(games[0]!, 'first-game', 200, null));
    await store.insert(database.db, session(games.at(-1)!, 'last-game', 100, null));
    await store.insert(database.db, session(games.at(-1)!, 'last-game-new', 900, null));
    expect(ids(await store.findExpired(database.db, 300, 10))).toEqual(['last-game', 'first-game']);
    expect(ids(await store.findExpired(database.db, 300, 1))).toEqual(['last-game']);
  });

  it('open=true and open=false list only their sessions, newest first, with and without a game', async () => {
    await migrateToLatest(database);
    await seed();
    expect(ids(await store.list(database.db, { open: true, limit: 50 }))).toEqual(['b-new-open', 'a-mid-open', 'b-old-open', 'a-old-open']);
    expect(ids(await store.list(database.db, { open: false, limit: 50 }))).toEqual(['b-new-closed', 'b-leave-only', 'a-old-closed']);
    expect(ids(await store.list(database.db, { gameId: 'g_a', open: true, limit: 50 }))).toEqual(['a-mid-open', 'a-old-open']);
    expect(ids(await store.list(database.db, { gameId: 'g_b', open: false, limit: 1 }))).toEqual(['b-new-closed']);
    const after = { createdAt: 900, gameId: 'g_b', sessionId: 'b-new-open' };
    expect(ids(await store.list(database.db, { open: true, limit: 2, after }))).toEqual(['a-mid-open', 'b-old-open']);
  });

  it('neither open nor a player: open and closed sessions together, newest first, paged, with and without a game', async () => {
    await migrateToLatest(database);
    await seed();
    const all = ['b-new-closed', 'b-new-open', 'a-mid-open', 'b-leave-only', 'b-old-open', 'a-old-closed', 'a-old-open'];
    expect(ids(await store.list(database.db, { limit: 50 }))).toEqual(all);
    expect(ids(await store.list(database.db, { gameId: 'g_b', limit: 50 }))).toEqual(all.filter((i) => i.startsWith('b-')));
    expect(ids(await store.list(database.db, { gameId: 'g_a', limit: 50 }))).toEqual(all.filter((i) => i.startsWith('a-')));
    // Page by page at every size: each session once, in order, whichever index it is in.
    for (const gameId of [undefined, 'g_a', 'g_b']) {
      const expected = all.filter((i) => gameId === undefined || i.startsWith(gameId.slice(2)));
      for (let limit = 1; limit <= expected.length; limit++) {
        const seen: string[] = [];
        let after: { createdAt: number; gameId: string; sessionId: string } | undefined;
        for (;;) {
          const rows = await store.list(database.db, { gameId, limit, after });
          expect(rows.length).toBeLessThanOrEqual(limit);
          seen.push(...ids(rows));
          const last = rows.at(-1);
          if (rows.length < limit || !last) break;
          after = { createdAt: last.created_at, gameId: last.game_id, sessionId: last.session_id };
        }
        expect(seen, `game ${gameId}, limit ${limit}`).toEqual(expected);
      }
    }
    // Ties on created_at: by game, then session, both descending, across the two indexes.
    await store.insert(database.db, session('g_a', 'tie-open-a', 950, null));
    await store.insert(database.db, session('g_b', 'tie-closed-z', 950, 970));
    await store.insert(database.db, session('g_b', 'tie-open-c', 950, null));
    expect(ids(await store.list(database.db, { limit: 4 }))).toEqual(['tie-open-c', 'tie-closed-z', 'b-new-closed', 'tie-open-a']);
    // A leave moves a session from one index to the other; it is listed once, closed.
    expect(await store.close(database.db, 'g_b', 'b-new-open', 990, 'leave')).toBe(true);
    const rows = await store.list(database.db, { gameId: 'g_b', limit: 50 });
    expect(rows.filter((r) => r.session_id === 'b-new-open')).toEqual([expect.objectContaining({ left_at: 990 })]);
  });

  it('sessions stored before the migration are found in the right index after it', async () => {
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0005'));
    await migrateToLatest(database, before);
    await seed();
    await migrateToLatest(database);
    expect(ids(await store.list(database.db, { open: true, limit: 50 }))).toEqual(['b-new-open', 'a-mid-open', 'b-old-open', 'a-old-open']);
    expect(ids(await store.list(database.db, { open: false, limit: 50 }))).toEqual(['b-new-closed', 'b-leave-only', 'a-old-closed']);
    expect(ids(await store.findExpired(database.db, 300, 10))).toEqual(['a-old-open', 'b-old-open', 'a-mid-open']);
    expect(ids(await store.list(database.db, { gameId: 'g_a', limit: 50 }))).toEqual(['a-mid-open', 'a-old-closed', 'a-old-open']);
  });

  it('migration 0009 drops sessions_game_created, and a game\'s sessions are listed after it as before', async () => {
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < '0009'));
    await migrateToLatest(database, before);
    await seed();
    const listed = ids(await store.list(database.db, { limit: 50 }));
    await migrateToLatest(database);
    expect(ids(await store.list(database.db, { limit: 50 }))).toEqual(listed);
    const indexes = await sessionIndexes(database);
    expect(indexes).not.toContain('sessions_game_created');
    expect(indexes).toEqual(expect.arrayContaining(['sessions_open_created', 'sessions_closed_created']));
    // SQLite keeps a player's sessions in a file beside the database from 0011 on (db/player-index.ts).
    if (TEST_DB === 'postgres') expect(indexes).toContain('sessions_player_created');
    else expect(indexes).not.toContain('sessions_player_created');
  });
});

/** The names of the sessions table's indexes, on either database. */
async function sessionIndexes(database: Database): Promise<string[]> {
  const rows =
    TEST_DB === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'sessions'`.execute(database.db)
      : await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'sessions' and schemaname = current_schema()`.execute(database.db);
  return rows.rows.map((r) => r.name);
}

// What SQLite does with those queries: each game's page is a range read of its partial index,
// in the index's order (no sort of the game's sessions). PostgreSQL's plan depends on its
// statistics; the scale benchmark measures it at 10 million rows (docs/benchmarks.md, "Scale").
describe.skipIf(TEST_DB !== 'sqlite')('sessions on SQLite: the plans read the open and closed indexes', () => {
  let tdb: TestDatabase;
  let sqlite: LoggedSqlite;

  beforeEach(async () => {
    ({ tdb, sqlite } = await plannedDatabase(['g_a', 'g_b']));
  });
  afterEach(async () => {
    await sqlite.kysely.destroy();
    await tdb.drop();
  });

  /** The plan of the one sessions query `run` sent. */
  const plan = async (run: (s: SessionStore) => Promise<unknown>): Promise<string[]> => {
    sqlite.seen.length = 0;
    await run(new SessionStore(storeDatabase(sqlite.kysely, 'sqlite')));
    const sent = sqlite.seen.filter((q) => /"sessions"/.test(q.sql));
    expect(sent).toHaveLength(1);
    return sqlite.plan(sent[0]!);
  };

  /** Every read of the sessions table is a search of `index`, and no game's rows are sorted. */
  const readsOnly = (lines: string[], index: string) => {
    const reads = lines.filter((l) => /\bsessions\b/.test(l) && /^(SCAN|SEARCH)/.test(l));
    expect(reads.length).toBeGreaterThan(0);
    for (const l of reads) expect(l).toMatch(new RegExp(`^SEARCH sessions USING INDEX ${index} \\(game_id=\\?`));
  };

  it('the timeout sweep: sessions_open_created, per game', async () => {
    const lines = await plan((s) => s.findExpired(sqlite.kysely, 1_000, 500));
    readsOnly(lines, 'sessions_open_created');
    expect(lines).toContain('SEARCH m USING INTEGER PRIMARY KEY (rowid=?)');
  });

  it('open=true: sessions_open_created, with and without a game and a cursor', async () => {
    readsOnly(await plan((s) => s.list(sqlite.kysely, { open: true, limit: 50 })), 'sessions_open_created');
    const after = { createdAt: 900, gameId: 'g_a', sessionId: 's' };
    const lines = await plan((s) => s.list(sqlite.kysely, { gameId: 'g_a', open: true, limit: 50, after }));
    readsOnly(lines, 'sessions_open_created');
    expect(lines.some((l) => l.includes('TEMP B-TREE'))).toBe(false);
  });

  it('neither open nor a player: both indexes read in order, with and without a game and a cursor, only the pages merged', async () => {
    const after = { createdAt: 900, gameId: 'g_a', sessionId: 's' };
    for (const f of [{ limit: 50 }, { gameId: 'g_a', limit: 50 }, { gameId: 'g_a', limit: 50, after }, { limit: 50, after }]) {
      const lines = await plan((s) => s.list(sqlite.kysely, f));
      const reads = lines.filter((l) => /\bsessions\b/.test(l) && /^(SCAN|SEARCH)/.test(l));
      for (const index of ['sessions_open_created', 'sessions_closed_created']) {
        expect(reads.some((l) => l.startsWith(`SEARCH sessions USING INDEX ${index} (game_id=?`)), `${index}: ${JSON.stringify(f)}`).toBe(true);
      }
      for (const l of reads) expect(l, JSON.stringify(f)).toMatch(/^SEARCH sessions USING INDEX sessions_(open|closed)_created \(game_id=\?/);
      // The sorts are of pages (the games' pages merged, as for open=true, and the two sides of
      // the MERGE (UNION ALL)), never of a game's sessions: each index is read in its order.
      expect(lines, JSON.stringify(f)).toContain('MERGE (UNION ALL)');
      lines.forEach((l, i) => {
        if (!l.includes('TEMP B-TREE')) return;
        const pageSort = /^SCAN [oc]$/.test(lines[i - 1]!) || (f.gameId === undefined && lines[i - 1]!.startsWith('SEARCH sessions'));
        expect(pageSort, `${lines[i - 1]} / ${l}: ${JSON.stringify(f)}`).toBe(true);
      });
    }
  });

  it('open=false: sessions_closed_created, with and without a game', async () => {
    readsOnly(await plan((s) => s.list(sqlite.kysely, { open: false, limit: 50 })), 'sessions_closed_created');
    const lines = await plan((s) => s.list(sqlite.kysely, { gameId: 'g_b', open: false, limit: 50 }));
    readsOnly(lines, 'sessions_closed_created');
    expect(lines.some((l) => l.includes('TEMP B-TREE'))).toBe(false);
  });
});
