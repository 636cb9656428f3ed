import SQLite from 'better-sqlite3';
import { sql, type Kysely, type Transaction } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import type { DB } from '../src/db/schema.js';
import { TEST_DB } from './helpers/db.js';
import { migratedSqliteFile, removeSqliteFile } from './helpers/sqlite-file.js';

// SQLite's group commit (src/db/group-commit.ts) on a real file. PostgreSQL has no group commit:
// the PostgreSQL run of the suite skips this file.
describe.skipIf(TEST_DB !== 'sqlite')('SQLite group commit', () => {
  let dir: string;
  let file: string;
  let database: Database;
  let reader: SQLite.Database;

  beforeEach(async () => {
    ({ dir, file, database } = await migratedSqliteFile('combo-gc-'));
    // A second connection sees only what is committed.
    reader = new SQLite(file, { readonly: true });
  });

  afterEach(async () => {
    reader.close();
    await removeSqliteFile({ dir, database });
  });

  const insert = (trx: Transaction<DB>, x: number) => sql`insert into t (x) values (${x})`.execute(trx);
  const tempStore = async (q: Transaction<DB> | Database['db']) => (await sql<{ temp_store: number }>`pragma temp_store`.execute(q)).rows[0]?.temp_store;
  const committed = () => (reader.prepare('select x from t order by x').all() as { x: number }[]).map((r) => r.x);

  it('commits transactions that arrive together in one batch; a failing one is rolled back alone', async () => {
    const seen: number[][] = [];
    const results = await Promise.allSettled([
      database.transaction(async (trx) => {
        await insert(trx, 1);
        seen.push(committed());
      }),
      database.transaction(async (trx) => {
        await insert(trx, 2);
        throw new Error('job 2 fails after its write');
      }),
      database.transaction(async (trx) => {
        await insert(trx, 3);
        seen.push(committed());
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toBe('job 2 fails after its write');
    // One batch: while its jobs ran, nothing of it was committed yet.
    expect(seen).toEqual([[], []]);
    expect(committed()).toEqual([1, 3]);
  });

  it('runs one-statement jobs in the shared batch without savepoints; a failing statement leaves nothing', async () => {
    const seen: number[][] = [];
    let savepointError = '';
    const results = await Promise.allSettled([
      database.oneStatement(async (q) => {
        await sql`insert into t (x) values (1)`.execute(q);
        seen.push(committed());
        // No savepoint of its own: there is none to release.
        await sql`release savepoint job`.execute(q).catch((e: Error) => (savepointError = e.message));
      }),
      // The statement inserts 5, then fails on 1: SQLite undoes the whole statement, 5 included.
      database.oneStatement((q) => sql`insert into t (x) values (5), (1)`.execute(q)),
      database.transaction(async (trx) => {
        await insert(trx, 3);
        seen.push(committed());
      }),
      database.oneStatement((q) => sql`insert into t (x) values (4)`.execute(q)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/UNIQUE/);
    expect(savepointError).toMatch(/no such savepoint/);
    // One batch: while its jobs ran, nothing of it was committed yet.
    expect(seen).toEqual([[], []]);
    expect(committed()).toEqual([1, 3, 4]);
  });

  it('runs noSavepoint transactions in the shared batch without a savepoint of their own', async () => {
    let savepointError = '';
    const results = await Promise.allSettled([
      database.transaction(async (trx) => {
        await insert(trx, 1);
        await sql`release savepoint job`.execute(trx).catch((e: Error) => (savepointError = e.message));
        await insert(trx, 2);
      }, { noSavepoint: true }),
      database.transaction((trx) => insert(trx, 3)),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled']);
    expect(savepointError).toMatch(/no such savepoint/);
    expect(committed()).toEqual([1, 2, 3]);
  });

  // SQLite itself rolls the whole transaction back on some errors (SQLITE_FULL, SQLITE_IOERR):
  // simulated here by a job that ends the transaction and fails. The rest of the batch must not
  // then run statement by statement, each committing on its own while answered as failed.
  it('a transaction SQLite rolled back itself fails the whole batch, and nothing after it is committed', async () => {
    const ran: number[] = [];
    const results = await Promise.allSettled([
      database.transaction(async (trx) => {
        await insert(trx, 1);
        ran.push(1);
      }),
      database.transaction(async (trx) => {
        await sql`rollback`.execute(trx);
        throw new Error('database or disk is full');
      }, { noSavepoint: true }),
      database.transaction(async (trx) => {
        await insert(trx, 3);
        ran.push(3);
      }, { noSavepoint: true }),
      database.transaction(async (trx) => {
        await insert(trx, 4);
        ran.push(4);
      }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
    expect(ran).toEqual([1]);
    expect(committed()).toEqual([]);
    // The next batch runs normally.
    await database.transaction((trx) => insert(trx, 5));
    expect(committed()).toEqual([5]);
  });

  it('keeps journals in memory, but runs migrations with journals in temporary files', async () => {
    expect(await tempStore(database.db)).toBe(2); // MEMORY
    let during: number | undefined;
    const probe = {
      up: async (db: Kysely<unknown>) => {
        during = (await sql<{ temp_store: number }>`pragma temp_store`.execute(db)).rows[0]?.temp_store;
      },
    };
    await migrateToLatest(database, { ...migrations, '9999_probe': probe });
    expect(during).toBe(1); // FILE
    expect(await tempStore(database.db)).toBe(2);
    expect(await database.transaction((trx) => tempStore(trx))).toBe(2);
  });

  it('runs a large transaction alone, with journals in temporary files, and memory journals again after it', async () => {
    const [before, large, after] = await Promise.all([
      database.transaction(async (trx) => {
        await insert(trx, 1);
        return { temp: await tempStore(trx), committed: committed() };
      }),
      database.transaction(
        async (trx) => {
          await insert(trx, 2);
          return { temp: await tempStore(trx), committed: committed() };
        },
        { large: true },
      ),
      database.transaction(async (trx) => {
        await insert(trx, 3);
        return { temp: await tempStore(trx), committed: committed() };
      }),
    ]);
    expect(before).toEqual({ temp: 2, committed: [] });
    // Arrived with the others, but ran in a transaction of its own: the first had committed.
    expect(large).toEqual({ temp: 1, committed: [1] }); // FILE
    expect(after).toEqual({ temp: 2, committed: [1, 2] });
    expect(committed()).toEqual([1, 2, 3]);
  });

  it('restores memory journals after a large transaction that fails', async () => {
    const failed = database.transaction(
      async (trx) => {
        await insert(trx, 1);
        throw new Error('bulk change fails');
      },
      { large: true },
    );
    await expect(failed).rejects.toThrow('bulk change fails');
    expect(await database.transaction((trx) => tempStore(trx))).toBe(2);
    expect(committed()).toEqual([]);
  });
});
