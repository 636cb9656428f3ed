import { CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { DB } from './schema.js';
import { runDirectly, type StatementSource } from './direct.js';

// IMMEDIATE: the batch takes SQLite's write lock at once, so what its jobs read stays true until
// the commit, also against another process writing the same file.
const BEGIN = CompiledQuery.raw('begin immediate');
const BUSY_TIMEOUT = CompiledQuery.raw('pragma busy_timeout');
const NO_BUSY_WAIT = CompiledQuery.raw('pragma busy_timeout = 0');
/** How long a batch waits before it asks for the write lock again. */
const LOCK_RETRY_MS = 1;
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
const SAVEPOINT = CompiledQuery.raw('savepoint job');
const RELEASE = CompiledQuery.raw('release savepoint job');
const ROLLBACK_TO = CompiledQuery.raw('rollback to savepoint job');
// See openSqlite (open-sqlite.ts): journals in memory, except around a large transaction (TransactionOptions).
const TEMP_FILE = CompiledQuery.raw('pragma temp_store = FILE');
const TEMP_MEMORY = CompiledQuery.raw('pragma temp_store = MEMORY');

export interface TransactionOptions {
  /**
   * The transaction may change many rows (a bulk operation): on SQLite it runs alone, with its
   * journals in temporary files rather than in memory, so its memory use does not grow with
   * its size; on PostgreSQL it runs without the statement time-out
   * (DATABASE_STATEMENT_TIMEOUT_MS), which it could outgrow for good.
   */
  large?: boolean;
  /**
   * SQLite: the job leaves nothing behind when it throws (its writes come last, and it undoes
   * any write of its own that a later failure would strand), so it joins the batch without a
   * savepoint. A savepoint copies every page the job changes into a journal in memory, a
   * sizeable part of a create-order's work. PostgreSQL ignores it: there the job is a
   * transaction of its own.
   */
  noSavepoint?: boolean;
}

export type TransactionRunner = <T>(fn: (trx: Transaction<DB>) => Promise<T>, options?: TransactionOptions) => Promise<T>;
/** Runs `fn`, whose only write is ONE statement, atomically; settles after it committed. */
export type StatementRunner = <T>(fn: (q: Kysely<DB> | Transaction<DB>) => Promise<T>) => Promise<T>;

interface Job {
  fn: (trx: Transaction<DB>) => Promise<unknown>;
  large: boolean;
  /**
   * The job runs without a savepoint of its own: a one-statement job (StatementRunner; SQLite
   * undoes a failing statement by itself and keeps the transaction) or a `noSavepoint` one.
   */
  bare: boolean;
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
 *
 * When the event-loop turn that opened a batch brought several jobs (the service is busy), the
 * batch waits for one more turn before it commits: that turn's poll does not block (a callback
 * is pending) and reads the requests that arrived while the first turn's were handled, so they
 * join this batch instead of waiting for it to commit and then for a turn of their own. Under
 * load every request then waits about one turn, not one or two, which narrows the latency
 * spread (docs/benchmarks.md, "What stalls create-order's event loop"). A lone job commits in
 * its own turn.
 *
 * A batch asks for the write lock without SQLite's busy handler, which would sleep on the event
 * loop while another connection holds it (the checkpoint worker starting the WAL over, the CLI,
 * another process): it asks again every LOCK_RETRY_MS from a timer, up to the connection's busy
 * time-out, and the event loop serves other requests meanwhile.
 */
export class GroupCommitter {
  private queue: Job[] = [];
  /** A batch is open: a check for its commit is scheduled, or it is being committed. */
  private running = false;
  /** The batch has already waited its one extra turn. */
  private waited = false;
  /** Called when a batch finds the write lock held and starts waiting for it. */
  private readonly lockWaitListeners: (() => void)[] = [];

  /**
   * @param statements the SQLite connection itself: when given, the batch's control statements
   *   and its jobs' prepared statements run on it directly (db/direct.ts), inside the batch.
   */
  constructor(
    private readonly db: Kysely<DB>,
    private readonly statements?: StatementSource,
    private readonly maxBatch = 256,
  ) {}

  /** Calls `listener` each time a batch finds the write lock held and starts waiting for it. */
  readonly onLockWait = (listener: () => void): void => {
    this.lockWaitListeners.push(listener);
  };

  readonly run: TransactionRunner = <T>(fn: (trx: Transaction<DB>) => Promise<T>, options?: TransactionOptions): Promise<T> =>
    this.enqueue<T>(fn, options?.large === true, options?.noSavepoint === true && options.large !== true);

  /**
   * A job whose only write is one statement: it joins the batch without a savepoint of its own
   * (two statements fewer per job). As on PostgreSQL, where such a job runs without a
   * transaction, what the statement wrote stays if `fn` throws after it.
   */
  readonly runStatement: StatementRunner = <T>(fn: (q: Kysely<DB> | Transaction<DB>) => Promise<T>): Promise<T> =>
    this.enqueue<T>(fn, false, true);

  private enqueue<T>(fn: (trx: Transaction<DB>) => Promise<T>, large: boolean, bare: boolean): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, large, bare, resolve: resolve as (v: unknown) => void, reject });
      if (!this.running) {
        this.running = true;
        this.waited = false;
        setImmediate(this.commitWhenGathered);
      }
    });
  }

  /**
   * Runs in the check phase, after the turn's poll: the queue holds what arrived in the turn that
   * opened the batch (it was empty before). Several jobs: wait one turn more; else commit.
   */
  private readonly commitWhenGathered = (): void => {
    if (!this.waited && this.queue.length > 1 && this.queue.length < this.maxBatch) {
      this.waited = true;
      setImmediate(this.commitWhenGathered);
      return;
    }
    void this.drain();
  };

  private async drain(): Promise<void> {
    while (this.queue.length) await this.flush(this.nextBatch());
    this.running = false;
  }

  /** The next jobs in arrival order; a large job makes a batch of its own. */
  private nextBatch(): Job[] {
    const end = this.queue.findIndex((j, i) => i >= this.maxBatch || j.large);
    if (end === 0) return this.queue.splice(0, 1);
    return this.queue.splice(0, end === -1 ? this.maxBatch : end);
  }

  private async flush(batch: Job[]): Promise<void> {
    const large = batch.length === 1 && (batch[0] as Job).large;
    const failed = new Set<Job>();
    try {
      // One connection, held for the whole batch; the control statements are fixed text.
      await this.db.connection().execute(async (conn) => {
        const trx = conn as unknown as Transaction<DB>;
        const exec = this.control(conn);
        if (this.statements) runDirectly(trx, this.statements, false);
        if (large) await exec(TEMP_FILE);
        try {
          const begin = () => beginWithoutBlocking(exec, this.first(conn), () => this.lockWaitListeners.forEach((l) => l()));
          await transact(exec, begin, trx, batch, failed, () => this.statements?.transactionOpen?.() === false);
        } finally {
          if (large) await exec(TEMP_MEMORY);
        }
      });
    } catch (e) {
      // BEGIN or COMMIT failed: no job of the batch is durable.
      for (const j of batch) if (!failed.has(j)) j.reject(e);
      return;
    }
    for (const j of batch) if (!failed.has(j)) j.resolve(j.result);
  }

  /** Reads the first row of a control statement (a pragma's value). */
  private first(conn: Kysely<DB>): (q: CompiledQuery) => Promise<unknown> {
    const statements = this.statements;
    if (!statements) return async (q) => (await conn.executeQuery(q)).rows[0];
    return async (q) => statements.prepare(q.sql).get();
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

/**
 * BEGIN, each job in its own savepoint (a bare job without one), COMMIT. A job that fails is
 * rejected at once and added to `failed`.
 */
async function transact(
  exec: (q: CompiledQuery) => unknown,
  begin: () => Promise<void>,
  trx: Transaction<DB>,
  batch: Job[],
  failed: Set<Job>,
  lost: () => boolean,
): Promise<void> {
  await begin();
  try {
    for (const job of batch) {
      if (!job.bare) await exec(SAVEPOINT);
      try {
        job.result = await job.fn(trx);
        if (!job.bare) await exec(RELEASE);
      } catch (e) {
        // On some errors (disk full, I/O error) SQLite rolls the whole transaction back itself:
        // the jobs before this one are gone with it, and the ones after must not run outside a
        // transaction (each statement would commit on its own, then be answered as failed).
        if (lost()) throw e;
        if (!job.bare) {
          await exec(ROLLBACK_TO);
          await exec(RELEASE);
        }
        failed.add(job);
        // Nothing of it is kept (of a bare job, only what it wrote and did not undo before it
        // threw), so it can answer at once.
        job.reject(e);
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
}

/**
 * BEGIN IMMEDIATE with the busy handler off; while another connection holds the write lock,
 * asks again from a timer until the connection's busy time-out has passed (then SQLITE_BUSY, as
 * the busy handler would end). The busy time-out is put back for the connection's other uses
 * (migrations, a connection opened without the group commit).
 */
async function beginWithoutBlocking(exec: (q: CompiledQuery) => unknown, first: (q: CompiledQuery) => Promise<unknown>, onWait: () => void): Promise<void> {
  const budget = Number((await first(BUSY_TIMEOUT) as { timeout?: number } | undefined)?.timeout ?? 0);
  await exec(NO_BUSY_WAIT);
  try {
    const deadline = Date.now() + budget;
    for (let attempt = 0; ; attempt++) {
      try {
        await exec(BEGIN);
        return;
      } catch (e) {
        if ((e as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw e;
      }
      if (attempt === 0) onWait();
      await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    }
  } finally {
    await exec(CompiledQuery.raw(`pragma busy_timeout = ${budget}`));
  }
}
