import { once } from 'node:events';
import { readFileSync, statSync } from 'node:fs';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { SAFETY_NET_PAGES } from '../src/db/checkpointer.js';
import { TEST_DB } from './helpers/db.js';
import { createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';
import { until } from './helpers/receiver.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

/** The writer connection's own checkpoint threshold (pages). */
async function autocheckpoint(t: TestService): Promise<number> {
  const r = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(t.service.database.db);
  return r.rows[0]!.wal_autocheckpoint;
}

describe.skipIf(TEST_DB !== 'sqlite')('SQLite WAL checkpoints on a worker thread (SQLITE_CHECKPOINT_INTERVAL_MS)', () => {
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.stop();
    t = undefined;
  });

  it('copies committed pages into the database file off the event loop, and counts them in /metrics', async () => {
    t = await startService({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '10', METRICS_TOKEN } });
    const checkpointer = t.service.database.checkpointer!;
    expect(checkpointer).toBeDefined();
    // The writer checkpoints by itself only past the safety net.
    expect(await autocheckpoint(t)).toBe(SAFETY_NET_PAGES);
    const game = await createGame(t);
    const checkpointed = once(checkpointer, 'checkpoint');
    for (let i = 0; i < 20; i++) expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
    const [pages] = (await checkpointed) as [number];
    expect(pages).toBeGreaterThan(0);
    const text = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(text).toMatch(/^combo_sqlite_wal_checkpoints_total\{result="success"\} [1-9]/m);
    expect(text).toMatch(/^combo_sqlite_wal_checkpointed_pages_total [1-9]/m);
    // What was checkpointed is read back from the database file as committed.
    const n = await t.service.database.db.selectFrom('orders').select((eb) => eb.fn.countAll<number>().as('n')).where('game_id', '=', game.gameId).executeTakeFirstOrThrow();
    expect(Number(n.n)).toBe(20);
  });

  // SQLite answers how many WAL frames are copied so far: counted as is, every idle interval
  // added them again, and a counter that moves while nothing is written hides a stopped worker.
  it('counts pages once: with no writes the counters stay flat', async () => {
    t = await startService({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '10', METRICS_TOKEN } });
    const checkpointer = t.service.database.checkpointer!;
    let events = 0;
    let pages = 0;
    checkpointer.on('checkpoint', (n: number) => {
      events++;
      pages += n;
    });
    const game = await createGame(t);
    const checkpointed = once(checkpointer, 'checkpoint');
    for (let i = 0; i < 20; i++) expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
    await checkpointed;
    // Nothing written from here. The last pages are copied once the worker gets its turn (later
    // on a loaded machine): settled is 200 ms (20 intervals) without a report, which a worker
    // that counts again at every interval never reaches. Then 30 idle intervals stay flat.
    const settled = await until('checkpoint reports stop', async () => {
      const before = { events, pages };
      await new Promise((r) => setTimeout(r, 200));
      return events === before.events ? before : null;
    }, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    expect({ events, pages }).toEqual(settled);
  });

  // The transaction that starts the WAL over syncs the new header (a wait for the file system's
  // journal): the worker writes it, so that the service's commits append and never sync on the
  // event loop.
  it('starts the WAL over on its own thread once it copied all of it; idle, it does not again', async () => {
    t = await startService({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '10' } });
    const checkpointer = t.service.database.checkpointer!;
    const wal = `${t.service.database.sqliteFile!}-wal`;
    let startOvers = 0;
    checkpointer.on('startOver', () => startOvers++);
    const game = await createGame(t);
    for (let i = 0; i < 20; i++) expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
    await until('the worker starts the WAL over', async () => (startOvers > 0 ? true : null), 5_000);
    // Nothing written from here: once the last writes are copied and the WAL started over (200 ms
    // without one), the one frame it wrote is copied and the WAL is not started over again.
    const settled = await until('start-overs stop', async () => {
      const before = startOvers;
      await new Promise((r) => setTimeout(r, 200));
      return startOvers === before ? before : null;
    }, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(startOvers).toBe(settled);
    // WAL header: salts at bytes 16-23; the first frame's header follows it (page number, then
    // its salts at bytes 8-15). The first frame of the last WAL is the worker's page 1. (Read
    // once settled: a commit of the service that found the WAL all copied may have started it
    // over itself after one of the worker's start-overs; the worker then copies that and starts
    // it over once more.)
    const head = readFileSync(wal).subarray(0, 56);
    expect(head.readUInt32BE(32)).toBe(1);
    expect(head.subarray(40, 48)).toEqual(head.subarray(16, 24));
  });

  // Another process holds SQLite's write lock (the command line, a second instance): the write
  // waits for it from a timer, counted, and /metrics still answers with every backlog gauge (its
  // counts run on their own thread, never on the connection the waiting batch holds).
  it('counts a write that waits for the write lock in /metrics, which answers meanwhile; the write succeeds once the lock is free', async () => {
    // The worker's own start-overs would also make writes wait: a minute away here.
    t = await startService({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '60000', METRICS_TOKEN } });
    const service = t;
    const game = await createGame(service);
    const scrape = async () =>
      (await fetch(`${service.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` }, signal: AbortSignal.timeout(2_000) })).text();
    const waits = (text: string) => Number(/^combo_sqlite_write_lock_waits_total (\d+)/m.exec(text)?.[1]);
    const before = waits(await scrape());
    const holder = new SQLite(service.service.database.sqliteFile!);
    holder.exec('begin immediate');
    let answered = false;
    const created = signed(service, game, 'POST', '/v1/server/create-order', orderBody()).finally(() => (answered = true));
    try {
      const text = await until('the write waits for the lock', async () => {
        const body = await scrape();
        return waits(body) > before ? body : null;
      }, 4_000);
      expect(text).toMatch(/^combo_notifications_pending /m);
      expect(text).toMatch(/^combo_nppa_events_pending /m);
      expect(text).toMatch(/^combo_orders\{/m);
      expect(answered).toBe(false);
    } finally {
      holder.exec('rollback');
      holder.close();
    }
    expect((await created).status).toBe(200);
  });

  it('is on by default (every 20 ms); 0 leaves checkpoints to SQLite, in the committing connection', async () => {
    t = await startService();
    expect(t.service.database.checkpointer).toBeDefined();
    expect(await autocheckpoint(t)).toBe(SAFETY_NET_PAGES);
    await t.stop();
    t = await startService({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '0' } });
    expect(t.service.database.checkpointer).toBeUndefined();
    expect(await autocheckpoint(t)).toBe(1000);
  });

  it('keeps the WAL file near 8 MiB: the writer\'s own checkpoint lets the WAL start over', async () => {
    // The worker's first pass is a minute away, so only the writer's threshold is at work here:
    // at 10,000 pages (the old threshold) this WAL would grow to ~25 MiB.
    t = await startService({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '60000' } });
    const { database } = t.service;
    await sql`create table filler (x blob not null)`.execute(database.db);
    // ~6,000 pages of 4 KiB in 60 commits: three times the threshold.
    for (let i = 0; i < 60; i++) {
      await database.transaction(async (trx) => {
        for (let j = 0; j < 100; j++) await sql`insert into filler (x) values (randomblob(3500))`.execute(trx);
      });
    }
    const walBytes = statSync(`${database.sqliteFile!}-wal`).size;
    expect(walBytes).toBeGreaterThan(4 * 1024 * 1024);
    expect(walBytes).toBeLessThan(9 * 1024 * 1024);
  });
});
