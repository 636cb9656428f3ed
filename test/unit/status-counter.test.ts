import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStatusCounter } from '../../src/observability/count-worker.js';

describe('SqliteStatusCounter (orders per status, counted off the main thread)', () => {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'combo-counter-')), 'c.db');
  const db = new SQLite(file);
  db.pragma('journal_mode = WAL');
  db.exec('create table orders (order_id text primary key, status text not null)');
  const insert = db.prepare('insert into orders values (?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 300; i++) insert.run(`o${i}`, i % 3 === 0 ? 'created' : i % 3 === 1 ? 'paid' : 'delivered');
  })();
  const counter = new SqliteStatusCounter(file);
  afterAll(async () => {
    await counter.close();
    db.close();
  });

  const sorted = (rows: { status: string; n: number }[]) => [...rows].sort((a, b) => a.status.localeCompare(b.status));

  it('counts what is committed, as the query on the main connection does', async () => {
    const expected = db.prepare('select status, count(*) as n from orders group by status').all() as { status: string; n: number }[];
    expect(sorted(await counter.count())).toEqual(sorted(expected));
    insert.run('late', 'refunded');
    expect((await counter.count()).find((r) => r.status === 'refunded')).toEqual({ status: 'refunded', n: 1 });
  });

  it('answers concurrent counts, and starts a new thread after close', async () => {
    const [a, b] = await Promise.all([counter.count(), counter.count()]);
    expect(a).toEqual(b);
    await counter.close();
    expect(sorted(await counter.count())).toEqual(sorted(a));
  });

  it('fails a count when the file is not a database with orders, without hanging', async () => {
    const broken = new SqliteStatusCounter(path.join(path.dirname(file), 'missing.db'));
    await expect(broken.count()).rejects.toThrow();
    await broken.close();
  });

  it("a dead thread's exit fails only what was asked of it, not the count already sent to its replacement", async () => {
    // The worker that cannot open the file reports 'error', then 'exit' a turn later: a count
    // asked between the two goes to a new worker and must not be failed by the old one's exit.
    const later = path.join(path.dirname(file), 'later.db');
    const revived = new SqliteStatusCounter(later);
    try {
      await expect(revived.count()).rejects.toThrow();
      const d = new SQLite(later);
      d.exec("create table orders (order_id text primary key, status text not null); insert into orders values ('o1', 'paid')");
      d.close();
      expect(await revived.count()).toEqual([{ status: 'paid', n: 1 }]);
      // The dead worker's exit (a turn later) leaves its replacement in place: later counts go
      // to that one worker, which close() ends, and nothing answered stays waiting. (Private
      // fields: a worker lost from view shows nowhere else but in the process's threads.)
      const internals = revived as unknown as { thread: { waiting: Map<number, unknown> } | null };
      const replacement = internals.thread;
      await new Promise((r) => setImmediate(r));
      await revived.count();
      await revived.count();
      expect(internals.thread).toBe(replacement);
      expect(replacement?.waiting.size).toBe(0);
    } finally {
      await revived.close();
    }
  });
});
