import type { ControlledTransaction, Kysely, Transaction } from 'kysely';
import type { DB } from './schema.js';

export type TransactionRunner = <T>(fn: (trx: Transaction<DB>) => Promise<T>) => Promise<T>;

interface Job {
  fn: (trx: Transaction<DB>) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
  result?: unknown;
}

/**
 * Group commit for the embedded SQLite database. A commit costs far more than the inserts it
 * carries (every touched B-tree page is appended to the WAL), so transactions that arrive
 * together run in ONE physical transaction, each inside its own savepoint: a job that fails
 * rolls back to its savepoint alone. Every job's promise settles only after the physical COMMIT,
 * so an acknowledged write is a committed write. Jobs must use only the `trx` they are given
 * (SQLite has one connection; it is held until the commit).
 */
export class GroupCommitter {
  private queue: Job[] = [];
  private running = false;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly maxBatch = 256,
  ) {}

  readonly run: TransactionRunner = <T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.running) {
        this.running = true;
        setImmediate(() => void this.drain());
      }
    });

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      await this.flush(batch);
    }
    this.running = false;
  }

  private async flush(batch: Job[]): Promise<void> {
    let trx: ControlledTransaction<DB>;
    try {
      trx = await this.db.startTransaction().execute();
    } catch (e) {
      for (const j of batch) j.reject(e);
      return;
    }
    const done: Job[] = [];
    try {
      for (const job of batch) {
        const sp = await trx.savepoint('job').execute();
        try {
          job.result = await job.fn(sp);
          await sp.releaseSavepoint('job').execute();
          done.push(job);
        } catch (e) {
          await sp.rollbackToSavepoint('job').execute();
          await sp.releaseSavepoint('job').execute();
          job.reject(e); // nothing of it is kept: it can answer at once
        }
      }
      await trx.commit().execute();
    } catch (e) {
      await trx.rollback().execute().catch(() => {});
      for (const j of done) j.reject(e);
      return;
    }
    for (const j of done) j.resolve(j.result);
  }
}
