import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

/** What the WalCheckpointer (checkpointer.ts) gives its worker. */
export interface CheckpointerWorkerData {
  file: string;
  intervalMs: number;
  synchronous: 'NORMAL' | 'FULL';
}

/** Messages to the main thread: frames copied by one checkpoint, or why it failed. */
export type CheckpointerMessage = { frames: number } | { error: string };

interface WalCheckpoint {
  busy: number;
  log: number;
  checkpointed: number;
}

const data = workerData as CheckpointerWorkerData;
const port = parentPort as NonNullable<typeof parentPort>;
const post = (m: CheckpointerMessage) => port.postMessage(m);

const db = new SQLite(data.file);
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
  } catch (e) {
    post({ error: String((e as Error | undefined)?.message ?? e) });
  }
}, data.intervalMs);
port.on('message', () => {
  clearInterval(timer);
  db.close();
  port.close();
});
