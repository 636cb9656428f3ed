import { closeSync, copyFileSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase } from '../src/db/index.js';
import { PlayerIndexer, playerIndexFile } from '../src/db/player-index.js';
import { SessionStore } from '../src/sessions/store.js';
import { insertGames } from './helpers/sqlite-plans.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { admin, createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';
import { waitFor } from './helpers/wait.js';

// Audit of the SQLite player index (db/player-index.ts) through the service's real entry points.

/** A migrated SQLite database with game g_a and `n` sessions of `players` players, closed. */
async function withSessions(n: number, players: number): Promise<{ tdb: TestDatabase; file: string }> {
  const tdb = await createTestDatabase();
  const file = tdb.url.slice('sqlite:'.length);
  const database = openDatabase(tdb.url);
  await migrateToLatest(database);
  await insertGames(database.db, 'g_a');
  await database.close();
  const raw = new SQLite(file);
  raw.exec(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${n})
    insert into sessions (game_id, session_id, combo_id, entered_at, left_at, close_reason, created_at)
    select 'g_a', 's' || i, 'p' || (i % ${players}), i, null, null, i from n`);
  raw.close();
  return { tdb, file };
}

describe.skipIf(TEST_DB !== 'sqlite')('stopping the player index worker (SQLite)', () => {
  it('stop() during a long pass (a rebuild) returns promptly, not after the whole pass', async () => {
    const { tdb, file } = await withSessions(300_000, 1000);
    // Small chunks: the pass takes seconds, as a rebuild of millions of sessions takes minutes.
    const indexer = new PlayerIndexer({ file, intervalMs: 3_600_000, chunkRows: 200 });
    const passing = indexer.pass().catch((e: Error) => e);
    const through = () => {
      const index = new SQLite(playerIndexFile(file), { readonly: true });
      try {
        return (index.prepare('select through from progress').get() as { through: number }).through;
      } finally {
        index.close();
      }
    };
    await waitFor(() => through() > 0, 'the first chunk');
    await indexer.stop();
    // The pass ended part way (it would have reached 300,000): its caller is told, and what was
    // indexed before the stop stays indexed (each chunk is its own transaction).
    expect(await passing).toEqual(new Error('the player index worker has stopped'));
    expect(through()).toBeGreaterThan(0);
    expect(through()).toBeLessThan(300_000);
    await tdb.drop();
  }, 60_000);
});

describe.skipIf(TEST_DB !== 'sqlite')('the player index after a restore that kept the file (SQLite)', () => {
  let tdb: TestDatabase | undefined;
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
    await tdb?.drop();
  });

  it('a session entered right after the restart is listed by its player (the file no longer matches: docs/operations.md, "Durability")', async () => {
    tdb = await createTestDatabase();
    const file = tdb.url.slice('sqlite:'.length);
    const backup = `${file}.backup`;
    t = await startService({ db: tdb });
    const game: TestGame = await createGame(t);
    const enter = (svc: TestService, sessionId: string) =>
      signed(svc, game, 'POST', '/v1/server/enter-game', { combo_id: 'p', session_id: sessionId });
    for (const s of ['a1', 'a2']) expect((await enter(t, s)).status).toBe(200);
    // The nightly backup (SQLite's backup API, as `combo backup` does).
    const src = new SQLite(file);
    await src.backup(backup);
    src.close();
    // Later sessions, indexed by the worker.
    for (const s of ['b1', 'b2', 'b3', 'b4']) expect((await enter(t, s)).status).toBe(200);
    expect((await t.service.database.playerIndexer!.pass()).sessions.through).toBeGreaterThanOrEqual(6);
    await t.service.stop();
    // Restore: the database and its WAL are replaced; the player index is left as it was.
    rmSync(`${file}-wal`, { force: true });
    rmSync(`${file}-shm`, { force: true });
    copyFileSync(backup, file);
    t = await startService({ db: tdb });
    // The player enters again straight after the restart.
    expect((await enter(t, 'c1')).status).toBe(200);
    const listed = await admin(t, 'GET', `/admin/v1/sessions?game_id=${game.gameId}&combo_id=p`);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((s: { session_id: string }) => s.session_id).sort()).toEqual(['a1', 'a2', 'c1']);
    const all = await admin(t, 'GET', `/admin/v1/sessions?combo_id=p`);
    expect(all.body.data.map((s: { session_id: string }) => s.session_id).sort()).toEqual(['a1', 'a2', 'c1']);
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('a damaged player index whose first page is intact (SQLite)', () => {
  it('a file with damaged pages past its first: the listings stay exact (no SQLITE_CORRUPT), and the file is made again at the next start', async () => {
    const { tdb, file } = await withSessions(20_000, 100);
    let database = openDatabase(tdb.url);
    try {
      expect((await database.startPlayerIndexer!({ intervalMs: 3_600_000 }).pass()).sessions.through).toBe(20000);
      await database.close();
      // Pages in the middle of the file are damaged (a torn copy); its header and schema page are intact.
      const ix = playerIndexFile(file);
      const fd = openSync(ix, 'r+');
      writeSync(fd, Buffer.alloc(4 * 4096, 0x55), 0, 4 * 4096, Math.floor(statSync(ix).size / 8192) * 4096);
      closeSync(fd);
      database = openDatabase(tdb.url);
      const store = new SessionStore(database);
      const listAll = async () => {
        const failed: string[] = [];
        for (let p = 0; p < 100; p++) {
          for (const gameId of [undefined, 'g_a']) {
            try {
              expect(await store.list(database.db, { comboId: `p${p}`, gameId, limit: 500 })).toHaveLength(200);
            } catch (e) {
              failed.push(`p${p} ${gameId ?? ''}: ${(e as Error).message}`);
            }
          }
        }
        return failed;
      };
      expect(await listAll()).toEqual([]);
      // The next start makes the file again, and the worker fills it from the first session.
      await database.close();
      database = openDatabase(tdb.url);
      const check = new SQLite(ix, { readonly: true });
      expect(check.pragma('quick_check', { simple: true })).toBe('ok');
      expect(check.prepare('select through from progress').get()).toEqual({ through: 0 });
      check.close();
      expect((await database.startPlayerIndexer!({ intervalMs: 3_600_000 }).pass()).sessions.through).toBe(20000);
      expect(await listAll()).toEqual([]);
    } finally {
      await database.close();
      await tdb.drop();
    }
  }, 60_000);
});

describe.skipIf(TEST_DB !== 'sqlite')('starting the worker while another instance writes the player index (SQLite)', () => {
  it('the start-time check gives way (the worker checks at its first pass) rather than failing the start', async () => {
    const tdb = await createTestDatabase();
    const database = openDatabase(tdb.url);
    const other = new SQLite(playerIndexFile(tdb.url.slice('sqlite:'.length)));
    try {
      await migrateToLatest(database);
      await insertGames(database.db, 'g_a');
      await new SessionStore(database).insert(database.db, {
        game_id: 'g_a', session_id: 's1', combo_id: 'p', entered_at: 1, left_at: null, close_reason: null, created_at: 1,
      });
      // A file that no longer matches (the start-time check would empty it), and another
      // instance's worker in the middle of a long chunk of it.
      other.exec(`update progress set through = 99, game_id = 'g_a', session_id = 'gone'`);
      other.exec('begin immediate');
      const worker = database.startPlayerIndexer!({ intervalMs: 3_600_000 });
      other.exec('commit');
      expect((await worker.pass()).sessions).toEqual({ indexed: 1, through: 1 });
    } finally {
      other.close();
      await database.close();
      await tdb.drop();
    }
  }, 30_000);
});
