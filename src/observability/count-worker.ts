import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface StatusCount {
  status: string;
  n: number;
}

// Plain CommonJS so it runs the same from the sources (tests) and from the build: the driver's
// absolute path comes in workerData, so the worker does not depend on the working directory.
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file, { readonly: true });
db.pragma('busy_timeout = 5000');
const byStatus = db.prepare('select status, count(*) as n from orders group by status');
parentPort.on('message', (id) => {
  try {
    parentPort.postMessage({ id, rows: byStatus.all() });
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
export class SqliteStatusCounter {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (rows: StatusCount[]) => void; reject: (e: Error) => void }>();

  constructor(private readonly file: string) {}

  count(): Promise<StatusCount[]> {
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage(id);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private start(): Worker {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    const worker = new Worker(SOURCE, { eval: true, workerData: { file: this.file, driver } });
    worker.unref();
    worker.on('message', (m: { id: number; rows?: StatusCount[]; error?: string }) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(m.error));
      else w?.resolve(m.rows ?? []);
    });
    // A worker that dies fails what it was asked; the next count starts a new one.
    const fail = (e: Error) => {
      if (this.worker === worker) this.worker = null;
      for (const w of this.waiting.values()) w.reject(e);
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`status counter exited (${code})`)));
    this.worker = worker;
    return worker;
  }
}
