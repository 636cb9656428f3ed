import { truncateSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executeDirect } from '../src/db/direct.js';
import { isStorageUnavailable, type Database } from '../src/db/index.js';
import { TEST_DB } from './helpers/db.js';
import { migratedSqliteFile, nextTurn, readDirectly, removeSqliteFile } from './helpers/sqlite-file.js';

// The read-only connection's read transaction per event-loop turn (src/db/turn-snapshot.ts) over
// many turns, and the statements shared between direct reads and Kysely (src/db/direct.ts), on a
// real file. PostgreSQL has neither: the PostgreSQL run of the suite skips this file.
describe.skipIf(TEST_DB !== 'sqlite')('SQLite reads over many turns, and statements shared with Kysely', () => {
  let dir: string;
  let file: string;
  let database: Database;
  // Another process's connection to the same file (the CLI, a second instance).
  let other: SQLite.Database;

  beforeEach(async () => {
    ({ dir, file, database } = await migratedSqliteFile('combo-turns-'));
    other = new SQLite(file, { timeout: 0 });
  });

  afterEach(async () => {
    other.close();
    await removeSqliteFile({ dir, database });
  });

  /** A hot-path read: on the read-only connection, as the stores' prepared reads run. */
  const read = () => readDirectly(database);

  it("another process's commits are seen on every later turn, not only after the first one", async () => {
    for (let x = 1; x <= 4; x++) {
      // A read opens this turn's snapshot...
      expect(await read()).toEqual(Array.from({ length: x - 1 }, (_, i) => i + 1));
      await nextTurn();
      // ...which has ended by now: another process commits, and the next turn's reads see it.
      other.prepare('insert into t (x) values (?)').run(x);
      await nextTurn();
      expect(await read()).toEqual(Array.from({ length: x }, (_, i) => i + 1));
      await nextTurn();
    }
    // The snapshot is released at each turn's end: a checkpoint can empty the WAL.
    expect(other.pragma('wal_checkpoint(TRUNCATE)')).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
  });

  it('a read that fails with an I/O error (SQLite ends the read transaction itself) fails that read only: the turn ends without an uncaught error', async () => {
    // A page of `u` that only the WAL holds; the WAL then loses it (as a failing disk would).
    await sql`create table u (x integer primary key, b blob)`.execute(database.db);
    other.pragma('wal_checkpoint(TRUNCATE)');
    other.prepare('insert into t values (1)').run();
    other.prepare('insert into u values (1, randomblob(3000))').run();
    expect(await read()).toEqual([1]);
    truncateSync(`${file}-wal`, 0);
    const failed = executeDirect(database.db, 'select x, length(b) from u', []);
    await expect(failed).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_IOERR/) });
    // The turn's end must not throw (an uncaught error in setImmediate ends the process).
    await nextTurn();
    await nextTurn();
    // The connection still answers: here with the same error (the WAL is gone), which the
    // service answers 503.
    const again = await (executeDirect(database.db, 'select x, length(b) from u', []) as Promise<unknown>).then(
      () => null,
      (e: unknown) => e,
    );
    expect(again === null || isStorageUnavailable(again)).toBe(true);
  });

  it('a statement a batch read directly gives Kysely row objects afterwards, not arrays', async () => {
    await sql`insert into t (x) values (1), (2)`.execute(database.db);
    const text = 'select x from t order by x';
    // Inside a group-commit batch, a prepared read runs on the write connection itself, in
    // better-sqlite3's raw mode, with the statement Kysely's driver also uses for this text.
    const direct = await database.transaction(async (trx) => (await executeDirect<{ x: number }>(trx, text, []))?.rows);
    expect(direct).toEqual([{ x: 1 }, { x: 2 }]);
    const viaKysely = await sql<{ x: number }>`select x from t order by x`.execute(database.db);
    expect(viaKysely.rows).toEqual([{ x: 1 }, { x: 2 }]);
    const inBatch = await database.transaction(async (trx) => (await sql<{ x: number }>`select x from t order by x`.execute(trx)).rows);
    expect(inBatch).toEqual([{ x: 1 }, { x: 2 }]);
  });
});
