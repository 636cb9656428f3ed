import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/index.js';
import { TEST_DB } from './helpers/db.js';
import { migratedSqliteFile, nextTurn, readDirectly, removeSqliteFile } from './helpers/sqlite-file.js';

// The read-only SQLite connection's read transaction per event-loop turn (src/db/turn-snapshot.ts),
// on a real file. PostgreSQL has no such connection: the PostgreSQL run of the suite skips this file.
describe.skipIf(TEST_DB !== 'sqlite')('SQLite reads: one read transaction per event-loop turn', () => {
  let dir: string;
  let file: string;
  let database: Database;
  // Another process's connection to the same file (the CLI, a second instance).
  let other: SQLite.Database;

  beforeEach(async () => {
    ({ dir, file, database } = await migratedSqliteFile('combo-snap-'));
    other = new SQLite(file, { timeout: 0 });
  });

  afterEach(async () => {
    other.close();
    await removeSqliteFile({ dir, database });
  });

  /** A hot-path read: on the read-only connection, as the stores' prepared reads run. */
  const read = () => readDirectly(database);
  /** True once the event-loop turn in which it was called has ended. */
  const turnEnds = () => {
    const state = { ended: false };
    setImmediate(() => (state.ended = true));
    return state;
  };

  it("reads of one turn share a snapshot; another process's commit is seen from the next turn", async () => {
    const turn = turnEnds();
    expect(await read()).toEqual([]);
    other.prepare('insert into t (x) values (1)').run();
    expect(await read()).toEqual([]);
    expect(turn.ended).toBe(false);
    await nextTurn();
    expect(await read()).toEqual([1]);
  });

  it('the snapshot never outlives its turn: a checkpoint can then empty the WAL', async () => {
    expect(await read()).toEqual([]);
    other.prepare('insert into t (x) values (1)').run();
    // While the snapshot is open it pins the WAL: a TRUNCATE checkpoint cannot finish.
    expect(other.pragma('wal_checkpoint(TRUNCATE)')).toEqual([{ busy: 1, log: expect.any(Number), checkpointed: expect.any(Number) }]);
    await nextTurn();
    expect(other.pragma('wal_checkpoint(TRUNCATE)')).toEqual([{ busy: 0, log: 0, checkpointed: 0 }]);
  });

  it("a write of this process ends the turn's snapshot: a read after it, in the same turn, sees it", async () => {
    const turn = turnEnds();
    expect(await read()).toEqual([]);
    // A plain write outside any transaction (Kysely, autocommit).
    await sql`insert into t (x) values (2)`.execute(database.db);
    expect(await read()).toEqual([2]);
    // A write with RETURNING: a statement that returns rows and writes.
    const updated = await sql<{ x: number }>`update t set x = 3 returning x`.execute(database.db);
    expect(updated.rows).toEqual([{ x: 3 }]);
    expect(await read()).toEqual([3]);
    expect(turn.ended).toBe(false);
  });

  it('a group commit ends the snapshot that a read opened while its batch was running', async () => {
    let turn: { ended: boolean } | undefined;
    await database.transaction(async (trx) => {
      await sql`insert into t (x) values (4)`.execute(trx);
      // Runs inside the batch, in the turn's check phase: this snapshot would last into the next
      // turn, and it cannot see the batch, which has not committed yet.
      expect(await read()).toEqual([]);
      turn = turnEnds();
    });
    // The batch has committed; its caller reads in the same turn.
    expect(await read()).toEqual([4]);
    expect(turn?.ended).toBe(false);
  });

  it('closes with a snapshot open', async () => {
    expect(await read()).toEqual([]);
    await database.close();
    database = openDatabase(`sqlite:${file}`);
    expect(await read()).toEqual([]);
  });
});
