import net from 'node:net';
import path from 'node:path';
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

  /**
   * Connected socket pairs: `turns[i]()` writes a byte that the server side reads in the poll
   * phase of the next event-loop turn, and runs `onRead[i]` there, as a request's arrival would.
   * Unix sockets: a write is in the peer's queue when it returns.
   */
  async function socketTurns(onRead: (() => void)[]): Promise<{ turns: (() => void)[]; close: () => Promise<void> }> {
    const server = net.createServer();
    const socketPath = path.join(dir, 'turns.sock');
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const clients: net.Socket[] = [];
    for (const read of onRead) {
      const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
      const client = net.connect(socketPath);
      await new Promise((resolve) => client.once('connect', resolve));
      (await accepted).once('data', read);
      clients.push(client);
    }
    const close = async () => {
      for (const c of clients) c.destroy();
      await new Promise((resolve) => server.close(resolve));
    };
    return { turns: clients.map((c) => () => void c.write('x')), close };
  }

  /** Jobs that insert their number and record what was committed when they ran. */
  function recordingJobs() {
    const seen = new Map<number, number[]>();
    const jobs: Promise<void>[] = [];
    const job = (x: number) => {
      jobs.push(
        database.transaction(async (trx) => {
          await insert(trx, x);
          seen.set(x, committed());
        }),
      );
    };
    /** Starts the first turn and waits for `count` jobs to have run. */
    const run = async (sockets: Awaited<ReturnType<typeof socketTurns>>, count: number) => {
      try {
        sockets.turns[0]?.();
        await expect.poll(() => jobs.length).toBe(count);
        await Promise.all(jobs);
      } finally {
        await sockets.close();
      }
    };
    return { seen, job, run };
  }

  it('lets a batch opened by several jobs wait one more turn for the jobs read in that turn', async () => {
    const { seen, job, run } = recordingJobs();
    const sockets = await socketTurns([
      // Turn 1: two jobs arrive (the service is busy), and a request for the next turn is sent.
      () => {
        job(1);
        job(2);
        sockets.turns[1]?.();
      },
      // Turn 2: read while the batch waits: it joins it.
      () => {
        job(3);
        sockets.turns[2]?.();
      },
      // Turn 3: the batch waited its one turn and committed.
      () => job(4),
    ]);
    await run(sockets, 4);
    expect(seen.get(3)).toEqual([]);
    expect(seen.get(4)).toEqual([1, 2, 3]);
    expect(committed()).toEqual([1, 2, 3, 4]);
  });

  it('commits a lone job in the turn it arrived', async () => {
    const { seen, job, run } = recordingJobs();
    const sockets = await socketTurns([
      () => {
        job(1);
        sockets.turns[1]?.();
      },
      () => job(2),
    ]);
    await run(sockets, 2);
    expect(seen.get(2)).toEqual([1]);
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
