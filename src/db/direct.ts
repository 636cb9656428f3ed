import type SQLite from 'better-sqlite3';
import type { QueryResult } from 'kysely';
import type { TurnSnapshot } from './turn-snapshot.js';

/** Prepares (and caches) statements on one better-sqlite3 connection. */
export interface StatementSource {
  prepare(sql: string): SQLite.Statement;
}

interface Direct {
  statements: StatementSource;
  /** A read-only connection: only statements that do not write may run on it. */
  readOnly: boolean;
  /** The read-only connection's shared read transaction of the current turn. */
  snapshot?: TurnSnapshot;
}

const handles = new WeakMap<object, Direct>();

/**
 * Marks a Kysely handle whose queries may run on a better-sqlite3 connection directly. On the
 * hot paths Kysely's executor (connection mutex, plugins, several promise hops) costs more than
 * the statement itself. Two kinds of handle are marked:
 * - a group-commit batch's transaction: it holds SQLite's one write connection for the whole
 *   batch, so a direct statement runs inside that transaction, as Kysely would run it;
 * - the root handle, with a separate read-only connection: a read there sees what is committed
 *   (WAL), never a batch still in progress, and does not wait for the batch to end. Its reads
 *   share one read transaction per event-loop turn (`snapshot`, see db/turn-snapshot.ts).
 */
export function runDirectly(q: object, statements: StatementSource, readOnly: boolean, snapshot?: TurnSnapshot): void {
  handles.set(q, { statements, readOnly, snapshot });
}

/**
 * Runs `sql` on the handle's direct connection when it has one (and the statement may run
 * there); null when the caller must go through Kysely.
 */
export function executeDirect<R>(q: object, sql: string, params: readonly unknown[]): Promise<QueryResult<R>> | null {
  const direct = handles.get(q);
  if (!direct) return null;
  let stmt: SQLite.Statement;
  try {
    stmt = direct.statements.prepare(sql);
  } catch (e) {
    return Promise.reject(e);
  }
  if (direct.readOnly && !stmt.reader) return null;
  try {
    if (stmt.reader) {
      direct.snapshot?.enter();
      return Promise.resolve({ rows: stmt.all(params as unknown[]) as R[] });
    }
    const { changes } = stmt.run(params as unknown[]);
    return Promise.resolve({ rows: [], numAffectedRows: BigInt(changes) });
  } catch (e) {
    return Promise.reject(e);
  }
}
