import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface StatusCount {
  status: string;
  n: number;
}

export interface GameStatusCount extends StatusCount {
  game_id: string;
}

// Plain CommonJS so it runs the same from the sources (tests) and from the build: the driver's
// absolute path comes in workerData, so the worker does not depend on the working directory.
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file, { readonly: true });
db.pragma('busy_timeout = 5000');
const queries = {
  orders: db.prepare('select status, count(*) as n from orders group by status'),
  undelivered: db.prepare("select game_id, status, count(*) as n from notifications where status in ('pending', 'failed') group by game_id, status"),
};
parentPort.on('message', ({ id, query }) => {
  try {
    parentPort.postMessage({ id, rows: queries[query].all() });
  } catch (e) {
    parentPort.postMessage({ id, error: String((e && e.message) || e) });
  }
});
`;

/**
 * Counts orders per status on a thread of its own, over its own read-only connection to the
 * SQLite file. better-sqlite3 is synchronous: on the main thread this count, ~1-2 s at 10
 * million orders, stopped every request for as long on each /metrics scrape.
 */
type Waiting = Map<number, { resolve: (rows: never[]) => void; reject: (e: Error) => void }>;

/** A running worker and the counts sent to it that it has not answered yet. */
interface CountThread {
  worker: Worker;
  waiting: Waiting;
}

export class SqliteStatusCounter {
  private thread: CountThread | null = null;
  private nextId = 0;

  constructor(private readonly file: string) {}

  /** Orders per status. */
  count(): Promise<StatusCount[]> {
    return this.ask('orders');
  }

  /** Undelivered notifications (pending, failed) per game and status, over notifications_due. */
  undelivered(): Promise<GameStatusCount[]> {
    return this.ask('undelivered');
  }

  private ask<R>(query: 'orders' | 'undelivered'): Promise<R[]> {
    const thread = this.thread ?? this.start();
    const id = this.nextId++;
    return new Promise<R[]>((resolve, reject) => {
      thread.waiting.set(id, { resolve: resolve as (rows: never[]) => void, reject });
      thread.worker.postMessage({ id, query });
    });
  }

  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = null;
    if (thread) await thread.worker.terminate();
  }

  private start(): CountThread {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(SOURCE, { eval: true, workerData: { file: this.file, driver } });
    const thread: CountThread = { worker, waiting: new Map() };
    worker.unref();
    worker.on('message', (m: { id: number; rows?: never[]; error?: string }) => {
      const w = thread.waiting.get(m.id);
      thread.waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(m.error));
      else w?.resolve(m.rows ?? []);
    });
    // A worker that dies fails what it was asked; the next count starts a new one. Its 'exit'
    // comes a turn after its 'error', when a count may already have gone to the new worker:
    // only this worker's own counts are failed.
    const fail = (e: Error) => {
      if (this.thread === thread) this.thread = null;
      for (const w of thread.waiting.values()) w.reject(e);
      thread.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`status counter exited (${code})`)));
    this.thread = thread;
    return thread;
  }
}
