import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { DB } from './schema.js';
import { runDirectly, type StatementSource } from './direct.js';

// IMMEDIATE: the batch takes SQLite's write lock at once, so what its jobs read stays true until
// the commit, also against another process writing the same file.
const BEGIN = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
const SAVEPOINT = CompiledQuery.raw('savepoint job');
const RELEASE = CompiledQuery.raw('release savepoint job');
const ROLLBACK_TO = CompiledQuery.raw('rollback to savepoint job');

export type TransactionRunner = <T>(fn: (trx: Transaction<DB>) => Promise<T>) => Promise<T>;
/** Runs `fn`, whose only write is ONE statement, atomically; settles after it committed. */
export type StatementRunner = <T>(fn: (q: Kysely<DB> | Transaction<DB>) => Promise<T>) => Promise<T>;

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

  /**
   * @param statements the SQLite connection itself: when given, the batch's control statements
   *   and its jobs' prepared statements run on it directly (db/direct.ts), inside the batch.
   */
  constructor(
    private readonly db: Kysely<DB>,
    private readonly statements?: StatementSource,
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
    const failed = new Set<Job>();
    try {
      // One connection, held for the whole batch; the control statements are fixed text.
      await this.db.connection().execute(async (conn) => {
        const trx = conn as unknown as Transaction<DB>;
        const exec = this.control(conn);
        if (this.statements) runDirectly(trx, this.statements, false);
        await exec(BEGIN);
        try {
          for (const job of batch) {
            await exec(SAVEPOINT);
            try {
              job.result = await job.fn(trx);
              await exec(RELEASE);
            } catch (e) {
              await exec(ROLLBACK_TO);
              await exec(RELEASE);
              failed.add(job);
              job.reject(e); // nothing of it is kept: it can answer at once
            }
          }
          await exec(COMMIT);
        } catch (e) {
          try {
            await exec(ROLLBACK);
          } catch {
            // the batch is lost either way; the original error is the one to report
          }
          throw e;
        }
      });
    } catch (e) {
      // BEGIN or COMMIT failed: no job of the batch is durable.
      for (const j of batch) if (!failed.has(j)) j.reject(e);
      return;
    }
    for (const j of batch) if (!failed.has(j)) j.resolve(j.result);
  }

  /** Runs a control statement: on the connection itself when it is known, else through Kysely. */
  private control(conn: Kysely<DB>): (q: CompiledQuery) => unknown {
    const statements = this.statements;
    if (!statements) return (q) => conn.executeQuery(q);
    return (q) => {
      statements.prepare(q.sql).run();
    };
  }
}
