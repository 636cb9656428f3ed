import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * WAL pages at which the writer checkpoints by itself while the checkpointer runs: a safety net
 * that bounds the WAL (~40 MiB of 4 KiB pages) should the worker stop. SQLite's default is 1000.
 */
export const SAFETY_NET_PAGES = 10_000;

// Plain CommonJS so it runs the same from the sources (tests) and from the build: the driver's
// absolute path comes in workerData (see observability/count-worker.ts).
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const db = new SQLite(workerData.file);
db.pragma('synchronous = ' + workerData.synchronous);
const timer = setInterval(() => {
  try {
    // PASSIVE: copies what no reader still needs, never waits for a lock and never blocks one.
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    if (r.checkpointed > 0) parentPort.postMessage({ frames: r.checkpointed });
  } catch (e) {
    parentPort.postMessage({ error: String((e && e.message) || e) });
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface CheckpointerOptions {
  file: string;
  intervalMs: number;
  synchronous: 'NORMAL' | 'FULL';
}

/**
 * Copies the WAL back into the SQLite database file on a thread of its own, every
 * `intervalMs` (opt-in: SQLITE_CHECKPOINT_INTERVAL_MS). Left to SQLite, the connection that
 * commits when the WAL passes 1000 pages does the checkpoint inside that commit: a thousand
 * page reads and writes and two fsyncs on the event loop, which every request in flight waits
 * for. On the 2-core benchmark VM the worker raised write throughput but, competing with the
 * load generator for the cores, made create-order's p99 worse (docs/benchmarks.md, "Thirteenth
 * session"). Durability is unchanged: a commit is durable in the WAL; the checkpoint only moves
 * pages.
 *
 * Emits 'checkpoint' (frames copied) and 'failure' (Error): a failed checkpoint is retried at
 * the next interval; a worker that dies is not restarted, and the writer's own checkpoint at
 * SAFETY_NET_PAGES takes over.
 */
export class WalCheckpointer extends EventEmitter {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(o: CheckpointerOptions) {
    super();
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.worker = new Worker(SOURCE, { eval: true, workerData: { file: o.file, driver, intervalMs: o.intervalMs, synchronous: o.synchronous } });
    this.worker.unref();
    this.worker.on('message', (m: { frames?: number; error?: string }) => {
      if (m.error !== undefined) this.emit('failure', new Error(`WAL checkpoint failed: ${m.error}`));
      else this.emit('checkpoint', m.frames);
    });
    this.worker.on('error', (e) => this.emit('failure', e));
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  /** Stops the worker and closes its connection (before the database itself is closed). */
  async stop(): Promise<void> {
    this.worker.postMessage('stop');
    await this.exited;
  }
}
