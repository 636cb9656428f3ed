import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { PlayerIndexer, playerIndexFile, type PlayerIndexPass } from '../src/db/player-index.js';
import { SessionStore, type SessionRow } from '../src/sessions/store.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { admin, createGame, signed, startService, type TestService } from './helpers/service.js';
import { insertGames } from './helpers/sqlite-plans.js';
import { METRICS_TOKEN, sample } from './helpers/metrics.js';

// A player's sessions (the operator's listing with combo_id, a player's online days). On SQLite
// they are indexed off the request path, in a file beside the database that a worker thread
// fills (db/player-index.ts); a listing reads the file's entries and the sessions past them.
// Whatever the worker has reached, a listing must be what one query over the table would give.

type Cursor = { createdAt: number; gameId: string; sessionId: string };

const GAMES = ['g_a', 'g_b'];
const PLAYERS = ['p1', 'p2', '玩家三'];

/** Sessions of three players in two games, with ties on created_at, open and closed. */
function sessionsFrom(start: number, n: number): SessionRow[] {
  return Array.from({ length: n }, (_, k) => {
    const i = start + k;
    const createdAt = 1_000 + Math.floor(i / 3) * 10; // three sessions per instant
    const closed = i % 4 === 0;
    return {
      game_id: GAMES[i % 2]!,
      session_id: `s-${String((i * 7919) % 1000).padStart(3, '0')}-${i}`, // not in insert order
      combo_id: PLAYERS[i % 3]!,
      entered_at: createdAt,
      left_at: closed ? createdAt + 5 : null,
      close_reason: closed ? 'leave' : null,
      created_at: createdAt,
    };
  });
}

/** What the listing must give: the rows filtered and sorted in memory. */
function expected(all: SessionRow[], f: { comboId: string; gameId?: string; open?: boolean; since?: number; after?: Cursor }): string[] {
  const newer = (r: SessionRow, c: Cursor) =>
    r.created_at < c.createdAt || (r.created_at === c.createdAt && (r.game_id < c.gameId || (r.game_id === c.gameId && r.session_id < c.sessionId)));
  return all
    .filter((r) => r.combo_id === f.comboId && (f.gameId === undefined || r.game_id === f.gameId))
    .filter((r) => f.open === undefined || (r.left_at === null) === f.open)
    .filter((r) => f.since === undefined || r.created_at >= f.since)
    .filter((r) => !f.after || newer(r, f.after))
    .sort((a, b) => b.created_at - a.created_at || (a.game_id < b.game_id ? 1 : a.game_id > b.game_id ? -1 : a.session_id < b.session_id ? 1 : -1))
    .map((r) => r.session_id);
}

const ids = (rows: SessionRow[]) => rows.map((r) => r.session_id);

/** Every player's listing, with and without a game and open, paged at every size, against `expected`. */
async function checkListings(store: SessionStore, database: Database, all: SessionRow[]): Promise<void> {
  for (const comboId of PLAYERS) {
    for (const gameId of [undefined, ...GAMES]) {
      for (const open of [undefined, true, false]) {
        const f = { comboId, gameId, open };
        expect(ids(await store.list(database.db, { ...f, limit: 500 })), JSON.stringify(f)).toEqual(expected(all, f));
        for (const limit of [1, 2, 5]) {
          const seen: string[] = [];
          let after: Cursor | undefined;
          for (;;) {
            const rows = await store.list(database.db, { ...f, limit, after });
            expect(ids(rows), JSON.stringify({ ...f, limit, after })).toEqual(expected(all, { ...f, after }).slice(0, limit));
            seen.push(...ids(rows));
            const last = rows.at(-1);
            if (rows.length < limit || !last) break;
            after = { createdAt: last.created_at, gameId: last.game_id, sessionId: last.session_id };
          }
          expect(seen, JSON.stringify({ ...f, limit })).toEqual(expected(all, f));
        }
      }
      if (gameId !== undefined) {
        for (const since of [0, 1_050, 1_200, 99_999]) {
          const got = await store.playerSessions(database.db, gameId, comboId, since);
          expect(ids(got).sort(), JSON.stringify({ comboId, gameId, since })).toEqual(expected(all, { comboId, gameId, since }).sort());
        }
      }
    }
  }
}

/** A fresh database of the suite's kind, migrated, with GAMES. */
async function migrated(): Promise<{ tdb: TestDatabase; database: Database; store: SessionStore }> {
  const tdb = await createTestDatabase();
  const database = openDatabase(tdb.url);
  await migrateToLatest(database);
  await insertGames(database.db, ...GAMES);
  return { tdb, database, store: new SessionStore(database) };
}

describe('a player\'s sessions, whatever the player index has reached', () => {
  let tdb: TestDatabase;
  let database: Database;
  let store: SessionStore;
  let indexer: PlayerIndexer | undefined;

  beforeEach(async () => {
    ({ tdb, database, store } = await migrated());
  });
  afterEach(async () => {
    await database.close();
    await tdb.drop();
  });

  const insert = async (rows: SessionRow[]) => {
    for (const r of rows) await store.insert(database.db, r);
  };

  it('none indexed, some, all, and more past them: the listings and online-time reads are exact', async () => {
    const all = sessionsFrom(0, 40);
    await insert(all);
    await checkListings(store, database, all); // none indexed (on PostgreSQL: its own index)
    if (TEST_DB !== 'sqlite') return;
    // The worker never runs by its timer here: each pass is asked for.
    indexer = database.startPlayerIndexer!({ intervalMs: 3_600_000 });
    expect((await indexer.pass()).sessions).toEqual({ indexed: 40, through: 40 });
    await checkListings(store, database, all); // all indexed
    const more = sessionsFrom(40, 17);
    await insert(more);
    await checkListings(store, database, [...all, ...more]); // indexed, and a tail past them
    // A leave after indexing changes only the sessions row: open and closed follow it.
    const first = all[1]!;
    expect(await store.close(database.db, first.game_id, first.session_id, first.created_at + 1, 'leave')).toBe(true);
    const closedNow = all.map((r) => (r === first ? { ...r, left_at: r.created_at + 1, close_reason: 'leave' as const } : r));
    await checkListings(store, database, [...closedNow, ...more]);
    expect((await indexer.pass()).sessions).toEqual({ indexed: 17, through: 57 });
    await checkListings(store, database, [...closedNow, ...more]);
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('the player index file (SQLite)', () => {
  let tdb: TestDatabase;
  let file: string;
  let database: Database;
  let store: SessionStore;

  beforeEach(async () => {
    ({ tdb, database, store } = await migrated());
    file = tdb.url.slice('sqlite:'.length);
  });
  afterEach(async () => {
    await database.close();
    await tdb.drop();
  });

  const insert = async (rows: SessionRow[]) => {
    for (const r of rows) await store.insert(database.db, r);
  };
  /** The file's entries and progress, read with a connection of the test's own. */
  const indexState = () => {
    const db = new SQLite(playerIndexFile(file), { readonly: true });
    try {
      const entries = (db.prepare('select count(*) as n from session_players').get() as { n: number }).n;
      const progress = db.prepare('select through, game_id, session_id from progress').get();
      return { entries, progress };
    } finally {
      db.close();
    }
  };
  const reopen = async () => {
    await database.close();
    database = openDatabase(tdb.url);
    store = new SessionStore(database);
  };

  it('the migration drops the player index from the sessions table: an enter-game writes no entry keyed by player', async () => {
    const indexes = await sql<{ name: string; sql: string | null }>`select name, sql from sqlite_master where type = 'index' and tbl_name = 'sessions'`.execute(database.db);
    expect(indexes.rows.map((r) => r.name)).not.toContain('sessions_player_created');
    for (const r of indexes.rows) expect(r.sql ?? '', r.name).not.toContain('combo_id');
  });

  it('indexes in chunks, each with the rowid it reached, and goes on from there after a restart', async () => {
    const all = sessionsFrom(0, 10);
    await insert(all);
    const indexer = database.startPlayerIndexer!({ intervalMs: 3_600_000 });
    const indexed: number[] = [];
    indexer.on('indexed', (p: PlayerIndexPass) => indexed.push(p.sessions.indexed));
    expect((await indexer.pass()).sessions).toEqual({ indexed: 10, through: 10 });
    expect(indexState()).toEqual({ entries: 10, progress: { through: 10, game_id: all[9]!.game_id, session_id: all[9]!.session_id } });
    await reopen();
    await insert(sessionsFrom(10, 5));
    const again = database.startPlayerIndexer!({ intervalMs: 3_600_000 });
    expect((await again.pass()).sessions).toEqual({ indexed: 5, through: 15 });
    expect((await again.pass()).sessions).toEqual({ indexed: 0, through: 15 });
    expect(indexState().entries).toBe(15);
    expect(indexed).toEqual([10]);
  });

  it('in transactions of at most a chunk: a pass over more sessions than a chunk indexes them all', async () => {
    const all = sessionsFrom(0, 25);
    await insert(all);
    await database.close();
    const indexer = new PlayerIndexer({ file, intervalMs: 3_600_000, chunkRows: 4 });
    try {
      expect((await indexer.pass()).sessions).toEqual({ indexed: 25, through: 25 });
    } finally {
      await indexer.stop();
    }
    database = openDatabase(tdb.url);
    store = new SessionStore(database);
    expect(indexState().entries).toBe(25);
    await checkListings(store, database, all);
  });

  it('a file that no longer matches the database (its session at `through` is another) is emptied and filled again', async () => {
    const all = sessionsFrom(0, 12);
    await insert(all);
    const indexer = database.startPlayerIndexer!({ intervalMs: 3_600_000 });
    await indexer.pass();
    // As if the database had been replaced by another one (a restored backup) under the file.
    const db = new SQLite(playerIndexFile(file));
    db.prepare(`update progress set session_id = 'another'`).run();
    db.prepare(`insert into session_players values ('g_a', 'p1', 1, 'ghost')`).run();
    db.close();
    const resets: unknown[] = [];
    indexer.on('reset', () => resets.push(1));
    expect((await indexer.pass()).sessions).toEqual({ indexed: 12, through: 12 });
    expect(resets).toHaveLength(1);
    expect(indexState().entries).toBe(12);
    await checkListings(store, database, all);
  });

  it('a deleted or damaged file is made again at start, and filled from the first session', async () => {
    const all = sessionsFrom(0, 9);
    await insert(all);
    await database.startPlayerIndexer!({ intervalMs: 3_600_000 }).pass();
    await database.close();
    for (const damage of ['delete', 'garbage'] as const) {
      for (const suffix of ['', '-wal', '-shm']) rmSync(playerIndexFile(file) + suffix, { force: true });
      if (damage === 'garbage') writeFileSync(playerIndexFile(file), Buffer.alloc(8192, 7));
      database = openDatabase(tdb.url);
      store = new SessionStore(database);
      await checkListings(store, database, all); // nothing indexed yet: all read past `through`
      expect((await database.startPlayerIndexer!({ intervalMs: 3_600_000 }).pass()).sessions).toEqual({ indexed: 9, through: 9 });
      await checkListings(store, database, all);
      await database.close();
      expect(readFileSync(playerIndexFile(file)).subarray(0, 15).toString()).toBe('SQLite format 3');
    }
    database = openDatabase(tdb.url);
  });

  it('a pass that fails (no sessions table yet) is reported, and the next one goes on', async () => {
    const bare = await createTestDatabase();
    const other = openDatabase(bare.url);
    try {
      const indexer = other.startPlayerIndexer!({ intervalMs: 3_600_000 });
      const failures: Error[] = [];
      indexer.on('failure', (e: Error) => failures.push(e));
      await expect(indexer.pass()).rejects.toThrow(/player index: no such table: sessions/);
      expect(failures).toHaveLength(1);
      await migrateToLatest(other);
      await insertGames(other.db, 'g_a');
      await new SessionStore(other).insert(other.db, sessionsFrom(0, 1)[0]!);
      expect((await indexer.pass()).sessions).toEqual({ indexed: 1, through: 1 });
    } finally {
      await other.close();
      await bare.drop();
    }
  });

  it('a database in memory lists a player\'s sessions too (nothing indexed: all read from the table)', async () => {
    const memory = openDatabase('sqlite::memory:');
    try {
      await migrateToLatest(memory);
      await insertGames(memory.db, ...GAMES);
      const s = new SessionStore(memory);
      const all = sessionsFrom(0, 12);
      for (const r of all) await s.insert(memory.db, r);
      expect(memory.startPlayerIndexer).toBeUndefined();
      await checkListings(s, memory, all);
    } finally {
      await memory.close();
    }
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('the player index in the service (SQLite)', () => {
  let t: TestService;
  beforeEach(async () => {
    t = await startService({ env: { METRICS_TOKEN } });
  });
  afterEach(async () => t?.stop());

  it('sessions entered a moment ago are listed by player at once, and after the worker indexed them; /metrics counts them', async () => {
    const game = await createGame(t);
    const enter = (sessionId: string, comboId: string) =>
      signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: comboId, session_id: sessionId });
    for (let i = 0; i < 6; i++) expect((await enter(`s${i}`, i % 2 ? 'odd' : 'even')).status).toBe(200);
    const listed = async () => (await admin(t, 'GET', `/admin/v1/sessions?game_id=${game.gameId}&combo_id=odd`)).body.data.map((s: { session_id: string }) => s.session_id);
    expect((await listed()).sort()).toEqual(['s1', 's3', 's5']);
    const indexer = t.service.database.playerIndexer!;
    expect(indexer).toBeDefined();
    expect((await indexer.pass()).sessions.through).toBeGreaterThanOrEqual(6);
    expect((await listed()).sort()).toEqual(['s1', 's3', 's5']);
    const detail = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/even`);
    expect(detail.status).toBe(200);
    expect(detail.body.online_days).toHaveLength(7);
    // The pass's counts are in /metrics by the time it resolves. The worker's own pass (every
    // second) may have indexed some of the six first: each session is counted once, by one of them.
    const text = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(sample(text, 'combo_sqlite_player_index_sessions_total')).toBe(6);
    expect(sample(text, 'combo_sqlite_player_index_passes_total', { result: 'success' })).toBeGreaterThanOrEqual(1);
  });
});
