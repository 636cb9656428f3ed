import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import {
  DAMAGED,
  INDEXED_TABLES,
  isDamagedFile,
  progressHolds,
  progressSql,
  rowAtSql,
  type IndexedTable,
  type Progress,
  type RowAt,
} from './player-index-progress.js';

/** What the PlayerIndexer (player-index.ts) gives its worker. */
export interface PlayerIndexWorkerData {
  /** The database file, and the player index file beside it. */
  file: string;
  indexFile: string;
  intervalMs: number;
  chunkRows: number;
  /** A SharedArrayBuffer of one Int32: non-zero once the main thread stops the worker. */
  stop: SharedArrayBuffer;
}

/** Messages to the worker: run a pass now (answered with its id), or stop. */
export type PlayerIndexRequest = { pass: number } | 'stop';

/** What a pass did in one table: rows indexed, and the rowid indexed through. */
export interface TablePass {
  indexed: number;
  through: number;
}

/** What a pass did, per indexed table. */
export type PassResult = Record<IndexedTable['name'], TablePass>;

/** Messages to the main thread: a pass's result or failure (id: undefined for the timer's), or a table's reset. */
export type PlayerIndexMessage =
  | { id: number | undefined; passed: PassResult }
  | { id: number | undefined; error: string }
  | { reset: IndexedTable['name'] };

/** A new row, as read: [rowid, game_id, key, combo_id, created_at]. */
type NewRow = [number, string, string, string, number];

const data = workerData as PlayerIndexWorkerData;
const port = parentPort as NonNullable<typeof parentPort>;
const post = (m: PlayerIndexMessage) => port.postMessage(m);

const main = new SQLite(data.file, { readonly: true });
main.pragma('busy_timeout = 5000');
const index = new SQLite(data.indexFile);
index.pragma('busy_timeout = 5000');
index.pragma('synchronous = NORMAL');
// The file's pages stay in memory between passes up to this much (SQLite's default is 2 MiB):
// each pass touches pages all over the player key.
index.pragma('cache_size = -32768');

// Compared as the key (game_id, combo_id, created_at, session_id); strings by code unit, a fine
// order to insert in.
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const byKey = (a: NewRow, b: NewRow) => cmp(a[1], b[1]) || cmp(a[3], b[3]) || a[4] - b[4] || cmp(a[2], b[2]);

type StepResult = { reset: true } | { reset?: undefined; indexed: number; through: number };

/**
 * One step of table `t`, in one write transaction of the file (another instance's worker may
 * share it): the rows committed past `through`, up to a chunk; a reset when the file no longer
 * describes the database (progressHolds: the table's entries are emptied, to be filled again).
 */
function makeStep(t: IndexedTable): () => StepResult {
  const newRows = main.prepare(`select rowid, game_id, ${t.key}, combo_id, created_at from ${t.name} where rowid > ? order by rowid limit ?`).raw(true);
  const atRowid = main.prepare(rowAtSql(t));
  const progress = index.prepare(progressSql(t));
  const insert = index.prepare(`insert or ignore into ${t.entries} (game_id, combo_id, created_at, ${t.key}) values (?, ?, ?, ?)`);
  const advance = index.prepare(`update ${t.progress} set through = ?, game_id = ?, ${t.key} = ?`);
  const empty = index.prepare(`delete from ${t.entries}`);
  return index.transaction((): StepResult => {
    const p = progress.get() as Progress;
    if (!progressHolds(p, (rowid) => atRowid.get(rowid) as RowAt | undefined)) {
      empty.run();
      advance.run(0, null, null);
      return { reset: true };
    }
    const rows = newRows.all(p.through, data.chunkRows) as NewRow[];
    const last = rows[rows.length - 1];
    // In the index's order: each leaf page is reached once per chunk, from the one before it.
    rows.sort(byKey);
    for (const r of rows) insert.run(r[1], r[3], r[4], r[2]);
    if (last) advance.run(last[0], last[1], last[2]);
    return { indexed: rows.length, through: last ? last[0] : p.through };
  }).immediate;
}

// Prepared at the first pass, not at start: a pass fails (and is tried again) rather than the
// worker, should a table not be there yet.
const steps = new Map<IndexedTable, () => StepResult>();

// Set by the main thread before it asks the worker to stop: a pass (a rebuild of millions of
// rows takes minutes) ends after its current chunk, rather than holding up the service's stop.
const stopping = new Int32Array(data.stop);

/** One pass over table `t`: every row committed before it, in chunks; null when stopped part way. */
function passTable(t: IndexedTable): TablePass | null {
  let indexed = 0;
  for (;;) {
    if (Atomics.load(stopping, 0) !== 0) return null;
    let step = steps.get(t);
    if (!step) steps.set(t, (step = makeStep(t)));
    const r = step();
    if (r.reset) {
      post({ reset: t.name });
      continue;
    }
    indexed += r.indexed;
    if (r.indexed < data.chunkRows) return { indexed, through: r.through };
  }
}

/** One pass over every indexed table; null when stopped part way. */
function pass(): PassResult | null {
  const passed: Partial<PassResult> = {};
  for (const t of INDEXED_TABLES) {
    const r = passTable(t);
    if (!r) return null;
    passed[t.name] = r;
  }
  return passed as PassResult;
}

function run(id: number | undefined): void {
  try {
    const r = pass();
    // Stopped: the caller's pass is rejected when the worker exits.
    if (r) post({ id, passed: r });
  } catch (e) {
    // A damaged file (its header intact, or open() would have made it again): marked, so that
    // the next start makes it again (DAMAGED).
    if (isDamagedFile(e)) {
      try {
        index.pragma(`user_version = ${DAMAGED}`);
      } catch {
        // Its first page is damaged too: the next start finds it so as well.
      }
    }
    post({ id, error: String((e as Error | undefined)?.message ?? e) });
  }
}

const timer = setInterval(() => run(undefined), data.intervalMs);
port.on('message', (m: PlayerIndexRequest) => {
  if (m !== 'stop') return run(m.pass);
  clearInterval(timer);
  main.close();
  index.close();
  port.close();
});
