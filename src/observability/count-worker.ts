import type { Worker } from 'node:worker_threads';
import { startWorker } from '../lib/worker.js';
import type {
  GameStatusCount,
  PendingCount,
  StatusCount,
  StatusCounterMessage,
  StatusCounterQuery,
  StatusCounterRequest,
  StatusCounterWorkerData,
} from './status-counter-worker.js';

export type { GameStatusCount, PendingCount, StatusCount };

/**
 * Counts orders per status, undelivered notifications per game and the pending rows of the
 * notification and national-upload queues on a thread of its own (status-counter-worker.ts),
 * over its own read-only connection to the SQLite file. better-sqlite3 is synchronous: on the
 * main thread the orders' count, ~1-2 s at 10 million orders, stopped every request for as long
 * on each /metrics scrape; and a scrape never waits for the service's write connection, which a
 * write batch waiting for the write lock holds.
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

  /** Orders per status */
  count(): Promise<StatusCount[]> {
    return this.ask('orders');
  }

  /** Undelivered notifications (pending, failing, failed) per game and status (undelivered.ts). */
  undelivered(): Promise<GameStatusCount[]> {
    return this.ask('undelivered');
  }

  /** Pending notifications and pending national-upload events. */
  pending(): Promise<PendingCount[]> {
    return this.ask('pending');
  }

  private ask<R>(query: StatusCounterQuery): Promise<R[]> {
    const thread = this.thread ?? this.start();
    const id = this.nextId++;
    return new Promise<R[]>((resolve, reject) => {
      thread.waiting.set(id, { resolve: resolve as (rows: never[]) => void, reject });
      const request: StatusCounterRequest = { id, query };
      thread.worker.postMessage(request);
    });
  }

  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = null;
    if (thread) await thread.worker.terminate();
  }

  private start(): CountThread {
    const workerData: StatusCounterWorkerData = { file: this.file };
    const worker = startWorker(new URL('./status-counter-worker.js', import.meta.url), { workerData });
    const thread: CountThread = { worker, waiting: new Map() };
    worker.unref();
    worker.on('message', (m: StatusCounterMessage) => {
      const w = thread.waiting.get(m.id);
      thread.waiting.delete(m.id);
      if ('error' in m) w?.reject(new Error(m.error));
      else w?.resolve(m.rows as never[]);
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
