import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';

/** What the SqliteStatusCounter (count-worker.ts) gives its worker. */
export interface StatusCounterWorkerData {
  file: string;
}

/** One count per status. */
export interface StatusCount {
  status: string;
  n: number;
}

/** The answer to count request `id`: the counts, or why they could not be made. */
export type StatusCounterMessage = { id: number; rows: StatusCount[] } | { id: number; error: string };

const data = workerData as StatusCounterWorkerData;
const port = parentPort as NonNullable<typeof parentPort>;
const db = new SQLite(data.file, { readonly: true });
db.pragma('busy_timeout = 5000');
const byStatus = db.prepare('select status, count(*) as n from orders group by status');
port.on('message', (id: number) => {
  let answer: StatusCounterMessage;
  try {
    answer = { id, rows: byStatus.all() as StatusCount[] };
  } catch (e) {
    answer = { id, error: String((e as Error | undefined)?.message ?? e) };
  }
  port.postMessage(answer);
});
