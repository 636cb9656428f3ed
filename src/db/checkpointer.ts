import { EventEmitter } from 'node:events';
import type { Worker } from 'node:worker_threads';
import { startWorker } from '../lib/worker.js';
import type { CheckpointerMessage, CheckpointerWorkerData } from './checkpointer-worker.js';

/**
 * WAL pages at which the writer checkpoints by itself while the checkpointer runs (SQLite's
 * default is 1000). Under steady writes a commit nearly always lands while the worker copies, so
 * the worker's checkpoint rarely leaves the whole WAL copied, and only then can the next commit
 * start the WAL over from its beginning: left to the worker, the file would grow to the
 * threshold (40 MiB at 10,000 pages). At this threshold the
 * writer's own checkpoint finds all but the last interval's pages copied, so it is short, and it
 * lets the WAL start over: the file stays near 8 MiB. It also bounds the WAL should the worker stop.
 */
export const SAFETY_NET_PAGES = 2_000;

export interface CheckpointerOptions {
  file: string;
  intervalMs: number;
  synchronous: 'NORMAL' | 'FULL';
}

/**
 * Copies the WAL back into the SQLite database file on a thread of its own
 * (checkpointer-worker.ts), every
 * `intervalMs` (SQLITE_CHECKPOINT_INTERVAL_MS, default 20; 0 turns it off). Left to SQLite, the
 * connection that commits when the WAL passes 1000 pages does the checkpoint inside that commit:
 * a thousand page reads and writes and two fsyncs on the event loop, which every request in
 * flight waits for. On 2 cores the worker raises write throughput; its effect on the p99
 * depends on the machine, as its copying competes with the requests for the cores
 * (docs/benchmarks.md). Durability is unchanged: a commit
 * is durable in the WAL; the checkpoint only moves pages (and syncs the WAL, so a power loss
 * costs at most about the last interval's commits with synchronous=NORMAL).
 *
 * Once a checkpoint copied the whole WAL, the worker also starts the WAL over itself, so that the
 * header sync this takes happens on its thread, not in a commit on the event loop
 * (checkpointer-worker.ts, startOver).
 *
 * Emits 'checkpoint' (frames copied), 'startOver' (the worker started the WAL over) and
 * 'failure' (Error): a failed checkpoint is retried at
 * the next interval; a worker that dies is not restarted, and the writer's own checkpoint at
 * SAFETY_NET_PAGES takes over.
 */
export class WalCheckpointer extends EventEmitter {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;

  constructor(o: CheckpointerOptions) {
    super();
    const workerData: CheckpointerWorkerData = { file: o.file, intervalMs: o.intervalMs, synchronous: o.synchronous };
    this.worker = startWorker(new URL('./checkpointer-worker.js', import.meta.url), { workerData });
    this.worker.unref();
    this.worker.on('message', (m: CheckpointerMessage) => {
      if ('error' in m) this.emit('failure', new Error(`WAL checkpoint failed: ${m.error}`));
      else if ('startedOver' in m) this.emit('startOver');
      else this.emit('checkpoint', m.frames);
    });
    this.worker.on('error', (e) => this.emit('failure', e));
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  /** Stops the worker and closes its connection (before the database itself is closed). */
  async stop(): Promise<void> {
    // Referenced again while it stops: with nothing else left on the event loop (a shutdown), an
    // unreferenced worker's exit would never be waited for, and the process would end before
    // the database is closed and "stopped" is logged.
    this.worker.ref();
    this.worker.postMessage('stop');
    await this.exited;
  }
}
