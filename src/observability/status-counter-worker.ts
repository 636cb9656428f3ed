import { parentPort, workerData } from 'node:worker_threads';
import SQLite from 'better-sqlite3';
import { UNDELIVERED_SQL } from './undelivered.js';

/** What the SqliteStatusCounter (count-worker.ts) gives its worker. */
export interface StatusCounterWorkerData {
  file: string;
}

/** One count per status. */
export interface StatusCount {
  status: string;
  n: number;
}

/** One count per game and status. */
export interface GameStatusCount extends StatusCount {
  game_id: string;
}

/** Rows waiting in one table's queue (`pending` status). */
export interface PendingCount {
  table: 'notifications' | 'nppa_events';
  n: number;
}

/**
 * The counts the worker makes: orders per status, undelivered notifications per game and
 * status, and the pending rows of the notification and national-upload queues.
 */
export type StatusCounterQuery = 'orders' | 'undelivered' | 'pending';

/** Count request `id` of one query. */
export interface StatusCounterRequest {
  id: number;
  query: StatusCounterQuery;
}

/** The answer to count request `id`: the counts, or why they could not be made. */
export type StatusCounterMessage = { id: number; rows: StatusCount[] | GameStatusCount[] | PendingCount[] } | { id: number; error: string };

const data = workerData as StatusCounterWorkerData;
const port = parentPort as NonNullable<typeof parentPort>;
const db = new SQLite(data.file, { readonly: true });
db.pragma('busy_timeout = 5000');
const SQL: Record<StatusCounterQuery, string> = {
  orders: 'select status, count(*) as n from orders group by status',
  undelivered: UNDELIVERED_SQL,
  pending:
    "select 'notifications' as \"table\", count(*) as n from notifications where status = 'pending' " +
    "union all select 'nppa_events', count(*) from nppa_events where status = 'pending'",
};
/** Each query prepared at its first count (a count of one table does not need the other). */
const prepared = new Map<StatusCounterQuery, SQLite.Statement>();
const statement = (query: StatusCounterQuery): SQLite.Statement => {
  let st = prepared.get(query);
  if (!st) prepared.set(query, (st = db.prepare(SQL[query])));
  return st;
};
port.on('message', ({ id, query }: StatusCounterRequest) => {
  let answer: StatusCounterMessage;
  try {
    answer = { id, rows: statement(query).all() as StatusCount[] };
  } catch (e) {
    answer = { id, error: String((e as Error | undefined)?.message ?? e) };
  }
  port.postMessage(answer);
});
