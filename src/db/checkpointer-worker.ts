import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

/** What the WalCheckpointer (checkpointer.ts) gives its worker. */
export interface CheckpointerWorkerData {
  file: string;
  intervalMs: number;
  synchronous: 'NORMAL' | 'FULL';
}

/**
 * Messages to the main thread: frames copied by one checkpoint, the WAL started over by this
 * thread (startOver below), or why a checkpoint failed.
 */
export type CheckpointerMessage = { frames: number } | { startedOver: true } | { error: string };

interface WalCheckpoint {
  busy: number;
  log: number;
  checkpointed: number;
}

const data = workerData as CheckpointerWorkerData;
const port = parentPort as NonNullable<typeof parentPort>;
const post = (m: CheckpointerMessage) => port.postMessage(m);

// No busy wait: the checkpoint never waits for a lock, and the WAL's start-over (below) is
// skipped when another connection holds the write lock.
const db = new SQLite(data.file, { timeout: 0 });
db.pragma(`synchronous = ${data.synchronous}`);
// SQLite answers how many of the WAL's frames are copied so far, not how many this call copied:
// the difference from the last answer is this call's, unless the WAL started over since.
let last = { log: 0, checkpointed: 0 };
const timer = setInterval(() => {
  try {
    // PASSIVE: copies what no reader still needs, never waits for a lock and never blocks one.
    const [r] = db.pragma('wal_checkpoint(PASSIVE)') as WalCheckpoint[];
    if (!r) return;
    const restarted = r.log < last.log || r.checkpointed < last.checkpointed;
    const copied = restarted ? r.checkpointed : r.checkpointed - last.checkpointed;
    last = { log: Math.max(r.log, 0), checkpointed: Math.max(r.checkpointed, 0) };
    if (copied > 0) post({ frames: copied });
    if (r.log > 1 && r.checkpointed === r.log) startOver();
  } catch (e) {
    post({ error: String((e as Error | undefined)?.message ?? e) });
  }
}, data.intervalMs);
/**
 * The whole WAL is copied: the next transaction to write starts it over from its beginning and
 * syncs its new header (also with synchronous=NORMAL: SQLite's guard against out-of-order writes
 * after a restart). That sync waits for the file system's journal, from a fraction of a
 * millisecond to tens; in the service's connection it would hold the event loop. So this thread
 * writes that transaction itself: page 1 rewritten unchanged (the application id). Skipped when
 * another connection holds the write lock: a writer that began before this checkpoint ended
 * appends in its commit; one that began after it (this thread was off its core in between)
 * starts the WAL over itself (docs/benchmarks.md, "Where the WAL starts over"). A WAL of one
 * frame is this transaction's own: not started over again.
 */
function startOver(): void {
  try {
    db.exec('begin immediate');
  } catch (e) {
    if ((e as { code?: unknown }).code === 'SQLITE_BUSY') return;
    throw e;
  }
  try {
    db.pragma(`application_id = ${Number(db.pragma('application_id', { simple: true }))}`);
    db.exec('commit');
    post({ startedOver: true });
  } finally {
    if (db.inTransaction) db.exec('rollback');
  }
}
port.on('message', () => {
  clearInterval(timer);
  db.close();
  port.close();
});
