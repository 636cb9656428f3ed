import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync, truncateSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { sql, type Transaction } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WalCheckpointer } from '../src/db/checkpointer.js';
import { isStorageUnavailable, migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import type { DB } from '../src/db/schema.js';
import { ManualClock } from '../src/lib/clock.js';
import { IdGenerator } from '../src/lib/ids.js';
import { OrderLifecycle } from '../src/orders/lifecycle.js';
import { OrderStore } from '../src/orders/store.js';
import { OrderSweeper } from '../src/orders/sweeper.js';
import { TEST_DB } from './helpers/db.js';
import { migratedSqliteFile, removeSqliteFile } from './helpers/sqlite-file.js';
import { createOrder, statusOf } from './helpers/orders.js';
import { createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';

/**
 * How the SQLite storage core behaves when SQLite itself fails: a COMMIT or a BEGIN that fails,
 * a job that fails inside a large batch, a full database, a lock held by another process, a
 * checkpoint that fails; and the batch bounds of the group commit (src/db/group-commit.ts,
 * src/db/open-sqlite.ts, src/db/checkpointer.ts). Every failure here is a real one of SQLite's.
 */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const codeOf = (r: PromiseSettledResult<unknown>) => (r.status === 'rejected' ? (r.reason as { code?: string }).code : 'fulfilled');

/** The first 'checkpoint' or 'failure' the checkpointer emits (either, to fail fast on the wrong one). */
function nextCheckpointEvent(cp: WalCheckpointer, ms = 5000): Promise<{ kind: 'checkpoint' | 'failure'; value: unknown }> {
  return new Promise((resolve, reject) => {
    const done = (kind: 'checkpoint' | 'failure') => (value: unknown) => {
      clearTimeout(timer);
      cp.off('checkpoint', onCheckpoint);
      cp.off('failure', onFailure);
      resolve({ kind, value });
    };
    const onCheckpoint = done('checkpoint');
    const onFailure = done('failure');
    const timer = setTimeout(() => {
      cp.off('checkpoint', onCheckpoint);
      cp.off('failure', onFailure);
      reject(new Error(`no checkpoint event within ${ms} ms`));
    }, ms);
    cp.on('checkpoint', onCheckpoint);
    cp.on('failure', onFailure);
  });
}

describe.skipIf(TEST_DB !== 'sqlite')('SQLite group commit: failed BEGIN and COMMIT, failing jobs, batch bounds', () => {
  let dir: string;
  let file: string;
  let database: Database;
  let reader: SQLite.Database;

  beforeEach(async () => {
    ({ dir, file, database } = await migratedSqliteFile('combo-gcf-'));
    // A second connection sees only what is committed.
    reader = new SQLite(file, { readonly: true });
  });

  afterEach(async () => {
    reader.close();
    await removeSqliteFile({ dir, database });
  });

  const insert = (trx: Transaction<DB>, x: number) => sql`insert into t (x) values (${x})`.execute(trx);
  const committed = () => (reader.prepare('select x from t order by x').all() as { x: number }[]).map((r) => r.x);

  it('a COMMIT that fails (a deferred foreign key) fails every job of the batch, commits nothing, and the next batch commits', async () => {
    await sql`create table p (id integer primary key)`.execute(database.db);
    await sql`create table c (x integer primary key, p integer references p (id) deferrable initially deferred)`.execute(database.db);
    const children = () => (reader.prepare('select x from c order by x').all() as { x: number }[]).map((r) => r.x);
    // Each job succeeds; the deferred check fails only at COMMIT, for the batch as a whole.
    const results = await Promise.allSettled([
      database.transaction((trx) => sql`insert into c (x) values (1)`.execute(trx)),
      database.transaction((trx) => sql`insert into c (x, p) values (2, 99)`.execute(trx)),
      database.oneStatement((q) => sql`insert into c (x) values (3)`.execute(q)),
    ]);
    expect(results.map(codeOf)).toEqual(['SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_FOREIGNKEY']);
    expect(children()).toEqual([]);
    // The failed batch was rolled back: the next one begins and commits.
    await database.transaction((trx) => sql`insert into c (x) values (5)`.execute(trx));
    await database.oneStatement((q) => sql`insert into c (x) values (6)`.execute(q));
    expect(children()).toEqual([5, 6]);
  });

  it('a BEGIN that fails (another connection holds the write lock past the busy time-out) fails every job, none of them runs, nothing is committed', async () => {
    await sql`pragma busy_timeout = 50`.execute(database.db);
    const holder = new SQLite(file);
    try {
      holder.exec('begin immediate');
      const ran: number[] = [];
      // Were a job run at all, the lock would be free for its write: the other connection
      // lets go of it the moment a job starts.
      const results = await Promise.allSettled([
        database.transaction(async (trx) => {
          ran.push(1);
          if (holder.inTransaction) holder.exec('rollback');
          await insert(trx, 1);
        }),
        database.oneStatement(async (q) => {
          ran.push(2);
          if (holder.inTransaction) holder.exec('rollback');
          await sql`insert into t (x) values (2)`.execute(q);
        }),
      ]);
      expect(results.map(codeOf)).toEqual(['SQLITE_BUSY', 'SQLITE_BUSY']);
      expect(results.every((r) => r.status === 'rejected' && isStorageUnavailable(r.reason))).toBe(true);
      expect(ran).toEqual([]);
      expect(committed()).toEqual([]);
      if (holder.inTransaction) holder.exec('rollback');
      await database.transaction((trx) => insert(trx, 3));
      expect(committed()).toEqual([3]);
    } finally {
      holder.close();
    }
  });

  it('a large transaction that fails leaves nothing, even when it says noSavepoint', async () => {
    const failed = database.transaction(
      async (trx) => {
        await insert(trx, 1);
        throw new Error('bulk change fails halfway');
      },
      { large: true, noSavepoint: true },
    );
    await expect(failed).rejects.toThrow('bulk change fails halfway');
    expect(committed()).toEqual([]);
    await database.transaction((trx) => insert(trx, 2));
    expect(committed()).toEqual([2]);
  });

  it('jobs that arrive while a batch runs, in different turns, share the next batch (one BEGIN/COMMIT)', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const first = database.transaction(async (trx) => {
      await insert(trx, 1);
      await gate;
    });
    await nextTurn(); // the first batch runs, its job waiting on the gate
    const a = database.transaction((trx) => insert(trx, 2));
    await nextTurn();
    const seenByB: number[][] = [];
    const b = database.transaction(async (trx) => {
      await insert(trx, 3);
      seenByB.push(committed());
    });
    await nextTurn();
    open();
    await Promise.all([first, a, b]);
    // B ran in the same batch as A: A's write was not committed yet, the first batch's was.
    expect(seenByB).toEqual([[1]]);
    expect(committed()).toEqual([1, 2, 3]);
  });

  it('a batch holds at most 256 jobs: of 300 arriving together, the 257th runs after the first 256 committed', async () => {
    const seen = new Map<number, number>();
    await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        database.transaction(async (trx) => {
          await insert(trx, i + 1);
          if (i === 0 || i === 255 || i === 256 || i === 299) seen.set(i + 1, committed().length);
        }),
      ),
    );
    expect(Object.fromEntries(seen)).toEqual({ 1: 0, 256: 0, 257: 256, 300: 256 });
    expect(committed()).toHaveLength(300);
  });

  it("a write waits for another process's lock (busy time-out) without holding the event loop, and succeeds once it is released", async () => {
    // A connection opened on a migrated file without migrating (as the CLI's commands open it):
    // only its own busy time-out is in force.
    await database.close();
    database = openDatabase(`sqlite:${file}`);
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const D = require(${JSON.stringify(driver)}); const d = new D(${JSON.stringify(file)});
         d.exec('begin immediate'); process.stdout.write('locked\\n');
         setTimeout(() => { d.exec('rollback'); d.close(); }, 400);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await once(holder.stdout!, 'data');
      const started = Date.now();
      // The wait is not SQLite's busy handler sleeping on the event loop: timers keep firing.
      let ticks = 0;
      const ticking = setInterval(() => ticks++, 10);
      await database.transaction((trx) => insert(trx, 7)).finally(() => clearInterval(ticking));
      expect(Date.now() - started).toBeGreaterThanOrEqual(100);
      expect(ticks).toBeGreaterThanOrEqual(5);
      expect(committed()).toEqual([7]);
      // The connection's busy time-out is back for its other uses.
      expect((await sql<{ timeout: number }>`pragma busy_timeout`.execute(database.db)).rows[0]?.timeout).toBe(5000);
    } finally {
      if (holder.exitCode === null) await once(holder, 'exit');
    }
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('SQLite WAL checkpoint worker: stopped on close, pages counted across a restarted WAL, failures reported', () => {
  let dir: string;
  let file: string;
  let database: Database | undefined;
  let other: SQLite.Database | undefined;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'combo-ckpt-'));
    file = path.join(dir, 'c.db');
  });
  afterEach(async () => {
    other?.close();
    other = undefined;
    await database?.close();
    database = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  async function open(intervalMs: number): Promise<{ db: Database; cp: WalCheckpointer }> {
    database = openDatabase(`sqlite:${file}`, { sqliteCheckpointIntervalMs: intervalMs });
    await migrateToLatest(database);
    await sql`create table t (x integer primary key, b blob)`.execute(database.db);
    other = new SQLite(file);
    return { db: database, cp: database.checkpointer! };
  }

  it('close() stops the worker: nothing is checkpointed after it, whatever is written', async () => {
    const { db, cp } = await open(10);
    const events: unknown[] = [];
    await once(cp, 'checkpoint'); // the worker runs
    await db.close();
    database = undefined;
    cp.on('checkpoint', (n) => events.push(n));
    cp.on('failure', (e) => events.push(e));
    // Another process writes on: a live worker would copy these within an interval or two.
    other!.prepare('insert into t (x, b) values (1, randomblob(20000))').run();
    await sleep(300);
    expect(events).toEqual([]);
  });

  it('counts every page of a WAL that started over, also when fewer pages than before were copied of the old one', async () => {
    const { cp } = await open(100);
    const pageSize = other!.pragma('page_size', { simple: true }) as number;
    const walFrames = () => (statSync(`${file}-wal`).size - 32) / (pageSize + 24);
    await once(cp, 'checkpoint');
    other!.pragma('wal_checkpoint(TRUNCATE)');
    other!.prepare('insert into t (x, b) values (1, randomblob(20000))').run();
    const copiable = walFrames();
    // A reader holds the snapshot of these frames: the worker copies them, and nothing after.
    const pinned = new SQLite(file, { readonly: true });
    let leftInOldWal = 0;
    try {
      pinned.exec('begin');
      pinned.prepare('select count(*) from t').get();
      const first = await nextCheckpointEvent(cp);
      expect(first.kind).toBe('checkpoint');
      other!.prepare('insert into t (x, b) values (2, randomblob(400000))').run();
      // A few intervals: the worker sees the WAL long, with only the first frames copied.
      await sleep(350);
      leftInOldWal = walFrames() - copiable;
      pinned.exec('commit');
    } finally {
      pinned.close();
    }
    // Another process checkpoints the rest and the WAL starts over, shorter than it was but
    // longer than what the worker had copied of it.
    other!.pragma('wal_checkpoint(TRUNCATE)');
    other!.prepare('insert into t (x, b) values (3, randomblob(100000))').run();
    const frames = walFrames();
    let next = await nextCheckpointEvent(cp);
    // The worker's thread runs on while this one goes from the reader's commit to the restart; on
    // a loaded machine this thread can be descheduled there, and the worker copies the rest of
    // the old WAL first. Its report of those frames comes first then (that run sees the old WAL
    // wholly copied, so it cannot tell a wrong count, but it must not fail either).
    if (next.kind === 'checkpoint' && next.value === leftInOldWal) next = await nextCheckpointEvent(cp);
    expect(next).toEqual({ kind: 'checkpoint', value: frames });
  });

  it("a checkpoint that fails (the WAL cannot be read) is reported as 'failure', and counted as one in /metrics", async () => {
    const METRICS_TOKEN = 'metrics-token-0123456789abcdef';
    const s = await startService({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '200', METRICS_TOKEN } });
    try {
      const cp = s.service.database.checkpointer!;
      const file = s.db.url.slice('sqlite:'.length);
      const game = await createGame(s);
      await once(cp, 'checkpoint');
      expect((await signed(s, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
      // Another process writes, and the frames it wrote are lost from the WAL file before the
      // worker's next pass (between two statements, no turn of the event loop): reading them
      // is a disk I/O error.
      const writer = new SQLite(file);
      try {
        writer.exec('create table filler (b blob)');
        writer.prepare('insert into filler (b) values (randomblob(20000))').run();
        truncateSync(`${file}-wal`, 0);
      } finally {
        writer.close();
      }
      const event = await nextCheckpointEvent(cp);
      expect(event.kind).toBe('failure');
      expect((event.value as Error).message).toMatch(/^WAL checkpoint failed: disk I\/O error/);
      const text = await (await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
      expect(text).toMatch(/^combo_sqlite_wal_checkpoints_total\{result="failure"\} [1-9]/m);
    } finally {
      await s.stop();
    }
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('a full SQLite database (SQLITE_FULL) through HTTP', () => {
  let s: TestService | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('create-order answers 503 service_unavailable (retryable), not 500, once the database reaches max_page_count', async () => {
    s = await startService();
    const game = await createGame(s);
    const { db } = s.service.database;
    const pages = (await sql<{ page_count: number }>`pragma page_count`.execute(db)).rows[0]!.page_count;
    await sql.raw(`pragma max_page_count = ${pages}`).execute(db);
    // Orders fill the free room of the last pages; the first one that needs a new page fails.
    let created = 0;
    let failed: { status: number; body: any } | undefined;
    for (let i = 0; i < 500 && !failed; i++) {
      const r = await signed(s, game, 'POST', '/v1/server/create-order', orderBody());
      if (r.status === 200) created++;
      else failed = r;
    }
    expect(created).toBeGreaterThan(0);
    expect(failed).toBeDefined();
    expect([failed!.status, failed!.body?.error]).toEqual([503, 'service_unavailable']);
  });
});

// The order store's guarded update and the sweeper's order, on both databases.
describe('orders: the guarded update and the expiry order', () => {
  let s: TestService | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('a guarded update leaves an order that is in another state unchanged, and answers undefined', async () => {
    const clock = new ManualClock(Date.now());
    s = await startService({ clock, env: { SWEEP_INTERVAL_MS: '600000' } });
    const game = await createGame(s);
    const o = await createOrder(s, game);
    const db = s.service.database;
    const store = new OrderStore(db);
    const now = clock.now();
    // The order is `created`: an update guarded on `paid` (a refund that lost a race) must not apply.
    const lost = await store.transaction((trx) => store.updateIfStatus(trx, o.order_id, 'paid', { status: 'refunded', refunded_at: now, updated_at: now }));
    expect(lost).toBeUndefined();
    expect(await statusOf(s, o.order_id)).toBe('created');
    const won = await store.transaction((trx) => store.updateIfStatus(trx, o.order_id, 'created', { status: 'canceled', canceled_at: now, updated_at: now }));
    expect(won?.status).toBe('canceled');
    expect(await statusOf(s, o.order_id)).toBe('canceled');
  });

  it('the sweeper expires the oldest expiry first when more than one batch is due', async () => {
    const clock = new ManualClock(Date.now());
    s = await startService({ clock, env: { SWEEP_INTERVAL_MS: '600000' } });
    const slow = await createGame(s, { order_ttl_seconds: 600 });
    const fast = await createGame(s, { order_ttl_seconds: 60 });
    // Created first, expiring last; then one created later that expires first.
    const late = await createOrder(s, slow);
    const early = await createOrder(s, fast);
    clock.advance(601_000);
    const db = s.service.database;
    // The planner knows the table for what it is, two rows (as autovacuum would tell it): it
    // then reads them in storage order, the first created first, whatever their expiry.
    await sql`analyze orders`.execute(db.db);
    const store = new OrderStore(db);
    const sweeper = new OrderSweeper({ store, lifecycle: new OrderLifecycle({ store, ids: new IdGenerator() }), clock, intervalMs: 600_000, batchSize: 1 });
    expect(await sweeper.sweepOnce()).toBe(2);
    // Event ids are time-ordered: the order of the expiry events is the order of the sweep.
    const expired = await db.db.selectFrom('order_events').select('order_id').where('to_status', '=', 'expired').orderBy('event_id').execute();
    expect(expired.map((e) => e.order_id)).toEqual([early.order_id, late.order_id]);
  });
});
