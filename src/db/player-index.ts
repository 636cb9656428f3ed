import { EventEmitter } from 'node:events';
import { existsSync, rmSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import { startWorker } from '../lib/worker.js';
import { DAMAGED, INDEXED_TABLES, isDamagedFile, progressHolds, progressSql, rowAtSql, type Progress, type RowAt } from './player-index-progress.js';
import type { PassResult, PlayerIndexMessage, PlayerIndexRequest, PlayerIndexWorkerData } from './player-index-worker.js';

/**
 * SQLite: the sessions and orders of a player, indexed off the request path.
 *
 * An index keyed by player in the sessions or orders table (`(game_id, combo_id, created_at,
 * session_id or order_id)`) takes each new row to another player's leaf page: every enter-game's or
 * create-order's commit would write one more page to the WAL, and the checkpoint copy it again,
 * the largest single cost of an enter-game and of a create-order's write (docs/benchmarks.md,
 * "What bounds each route", "SQLite writes"). So on SQLite those indexes live in a second file
 * beside the database, `<database>-player-index`, filled by a worker thread from each table in
 * rowid order (SQLite gives a new row the largest rowid yet, and neither table's rows are ever
 * deleted): once a second, in transactions of up to CHUNK_ROWS rows, each with the rowid it
 * has reached (`through`, one per table). A player's page of sessions (PROTOCOL 11's listing
 * with a player, a player's online days) or orders (the order listing with a player, a minor's
 * month of spending) is the file's entries joined to the rows they name, plus the rows past
 * `through`, read by rowid range: always exact, whatever the worker's lag; the lag only costs
 * the read.
 *
 * The file holds nothing that is not in the database: deleting it (or restoring the database
 * from a backup without it) makes the worker fill it again from the first row. The worker
 * checks at each pass that the row at each `through` is still the one it recorded; if not (the
 * database file was replaced, or a VACUUM renumbered rowids), it empties that table's entries
 * and starts over.
 * The file is attached to the read-only connection as `derived` (never to the write connection:
 * its `begin immediate` would then lock this file as well, and wait for the worker).
 */

/** The derived file beside the database file. */
export const playerIndexFile = (databaseFile: string): string => `${databaseFile}-player-index`;

/** The schema's version in the file's user_version: another version is emptied and rebuilt. */
const SCHEMA_VERSION = 1;

/** Marks the file damaged (see DAMAGED), through a connection that may write it; best effort. */
export function markPlayerIndexDamaged(index: SQLite.Database): void {
  try {
    index.pragma(`user_version = ${DAMAGED}`);
  } catch {
    // Its first page is damaged too: opening it fails, and it is made again then as well.
  }
}

export { isDamagedFile };

const damagedHandlers = new WeakMap<object, () => void>();

/** What a read through the Kysely handle `q` calls when it finds the player index damaged. */
export function onPlayerIndexDamaged(q: object, handler: () => void): void {
  damagedHandlers.set(q, handler);
}

/** A read through `q` found the player index damaged (player-sessions-sqlite.ts). */
export function playerIndexDamaged(q: object): void {
  damagedHandlers.get(q)?.();
}

/** Rows indexed per transaction of the worker: bounds its memory and its WAL. */
export const CHUNK_ROWS = 20_000;

/** How often the worker indexes new rows (ms). */
export const PLAYER_INDEX_INTERVAL_MS = 1000;

/** The file's tables, in the schema `p` ('' or 'derived.'): per indexed table, its entries and progress. */
const schema = (p: string) =>
  INDEXED_TABLES.map(
    (t) => `
  create table if not exists ${p}${t.entries} (
    game_id text not null, combo_id text not null, created_at integer not null, ${t.key} text not null,
    primary key (game_id, combo_id, created_at, ${t.key})
  ) without rowid;
  create table if not exists ${p}${t.progress} (
    id integer primary key check (id = 1), through integer not null, game_id text, ${t.key} text
  );
  insert or ignore into ${p}${t.progress} (id, through) values (1, 0);
`,
  ).join('');

/**
 * Opens (creating it if needed) the derived file and returns a connection to it. The caller keeps
 * it open while the database is: the read-only connection that attaches the file needs its WAL
 * index (-shm), which only a connection that may write creates.
 */
export function openPlayerIndexFile(databaseFile: string): SQLite.Database {
  try {
    return openOrCreate(playerIndexFile(databaseFile));
  } catch (e) {
    // Not a database, damaged (a partial copy, a disk fault) or marked so: it holds nothing of
    // its own, so it is made again.
    if (!isDamagedFile(e)) throw e;
    for (const suffix of ['', '-wal', '-shm']) rmSync(playerIndexFile(databaseFile) + suffix, { force: true });
    return openOrCreate(playerIndexFile(databaseFile));
  }
}

function openOrCreate(file: string): SQLite.Database {
  const db = new SQLite(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('busy_timeout = 5000');
    const version = db.pragma('user_version', { simple: true });
    if (version === DAMAGED) throw Object.assign(new Error('the player index was found damaged'), { code: 'SQLITE_CORRUPT' });
    if (version !== SCHEMA_VERSION) {
      for (const t of INDEXED_TABLES) db.exec(`drop table if exists ${t.entries}; drop table if exists ${t.progress};`);
      db.pragma(`user_version = ${SCHEMA_VERSION}`);
    }
    db.exec(schema(''));
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/** For a database in memory: the same schema, attached to its one connection, always empty. */
export function attachPlayerIndexInMemory(db: SQLite.Database): void {
  db.prepare(`attach database ':memory:' as derived`).run();
  db.exec(schema('derived.'));
}

/** Attaches the derived file to a (read-only) connection as `derived`. */
export function attachPlayerIndex(db: SQLite.Database, databaseFile: string): void {
  const file = playerIndexFile(databaseFile);
  if (!existsSync(file)) throw new Error(`the player index file ${file} does not exist`);
  db.prepare('attach database ? as derived').run(file);
}

/**
 * At start, before the service answers: empties a table's entries if its row at `through` is
 * not the database's (a restored backup, the file kept), as the worker's pass would, but at once.
 * Until then a listing would read the stale entries, and none of the rows written since the
 * restart that got rowids at or below the stale `through`. `index`: a connection that may write
 * the file; `main`: one to the database. True when entries were emptied; false too for a table
 * the database does not have yet (nothing to list, and the worker checks again at each pass).
 */
export function resetIfStale(index: SQLite.Database, main: SQLite.Database): boolean {
  let reset = false;
  for (const t of INDEXED_TABLES) {
    let at: SQLite.Statement;
    try {
      at = main.prepare(rowAtSql(t));
    } catch (e) {
      if (/no such table/.test((e as Error).message)) continue;
      throw e;
    }
    const progress = index.prepare(progressSql(t));
    const matches = () => progressHolds(progress.get() as Progress | undefined, (rowid) => at.get(rowid) as RowAt | undefined);
    // Read first without the file's write lock (another instance's worker may hold it for a chunk).
    if (matches()) continue;
    reset =
      index.transaction(() => {
        if (matches()) return false;
        index.exec(`delete from ${t.entries}`);
        index.prepare(`update ${t.progress} set through = 0, game_id = null, ${t.key} = null`).run();
        return true;
      }).immediate() || reset;
  }
  return reset;
}

export interface PlayerIndexerOptions {
  /** The database file. */
  file: string;
  intervalMs?: number;
  chunkRows?: number;
}

/** What one pass did, per table: rows indexed, and the rowid indexed through. */
export type PlayerIndexPass = PassResult;

/**
 * The worker thread (player-index-worker.ts) that fills the player index (see above). Emits 'indexed' (PlayerIndexPass,
 * after a pass that indexed rows), 'reset' (a table's entries were emptied to be filled again) and
 * 'failure' (Error; the pass is tried again at the next interval). A worker that dies is not
 * restarted: the listings stay exact, reading more of each table as it grows.
 */
export class PlayerIndexer extends EventEmitter {
  private readonly worker: Worker;
  private readonly exited: Promise<void>;
  /** Non-zero once stop() is called: the worker's pass ends after its current chunk. */
  private readonly stopping = new Int32Array(new SharedArrayBuffer(4));
  private readonly waiting = new Map<number, { resolve: (p: PlayerIndexPass) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  private stopped = false;

  constructor(o: PlayerIndexerOptions) {
    super();
    const workerData: PlayerIndexWorkerData = {
      file: o.file,
      indexFile: playerIndexFile(o.file),
      intervalMs: o.intervalMs ?? PLAYER_INDEX_INTERVAL_MS,
      chunkRows: o.chunkRows ?? CHUNK_ROWS,
      stop: this.stopping.buffer as SharedArrayBuffer,
    };
    this.worker = startWorker(new URL('./player-index-worker.js', import.meta.url), { workerData });
    this.worker.unref();
    this.worker.on('message', (m: PlayerIndexMessage) => {
      if ('reset' in m) return void this.emit('reset', m.reset);
      const waiter = m.id === undefined ? undefined : this.waiting.get(m.id);
      if (m.id !== undefined) this.waiting.delete(m.id);
      if ('error' in m) {
        const e = new Error(`player index: ${m.error}`);
        if (waiter) waiter.reject(e);
        this.emit('failure', e);
        return;
      }
      waiter?.resolve(m.passed);
      if (INDEXED_TABLES.some((t) => m.passed[t.name].indexed > 0)) this.emit('indexed', m.passed);
    });
    this.worker.on('error', (e) => this.emit('failure', e));
    this.exited = new Promise((resolve) =>
      this.worker.once('exit', () => {
        this.stopped = true;
        for (const w of this.waiting.values()) w.reject(new Error('the player index worker has stopped'));
        this.waiting.clear();
        resolve();
      }),
    );
  }

  /** Runs a pass now (besides the timer's): resolves once every row committed before it is indexed. */
  pass(): Promise<PlayerIndexPass> {
    if (this.stopped) return Promise.reject(new Error('the player index worker has stopped'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ pass: id } satisfies PlayerIndexRequest);
    });
  }

  /** Stops the worker and closes its connections (before the database itself is closed). */
  async stop(): Promise<void> {
    this.worker.ref(); // see WalCheckpointer.stop
    Atomics.store(this.stopping, 0, 1);
    this.worker.postMessage('stop' satisfies PlayerIndexRequest);
    await this.exited;
  }
}
