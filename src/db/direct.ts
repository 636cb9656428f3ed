import type SQLite from 'better-sqlite3';
import type { QueryResult } from 'kysely';
import type { TurnSnapshot } from './turn-snapshot.js';

/** Prepares (and caches) statements on one better-sqlite3 connection. */
export interface StatementSource {
  prepare(sql: string): SQLite.Statement;
  /** Whether a transaction is open on the connection (SQLite ends one itself on some errors). */
  transactionOpen?(): boolean;
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
 * Parameters are passed to better-sqlite3 as arguments, not as one array, up to this many:
 * it reads an array's elements one by one through V8's C++ API, and arguments directly (a
 * third cheaper for a 25-column insert). Past it the array, so that a long list cannot
 * exhaust the stack.
 */
const SPREAD_MAX = 64;

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

/** Whether the handle's queries may run on a better-sqlite3 connection directly (runDirectly). */
export const readsDirectly = (q: object): boolean => handles.has(q);

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
      return Promise.resolve({ rows: readRows<R>(stmt, params) });
    }
    const { changes } = params.length <= SPREAD_MAX ? stmt.run(...params) : stmt.run(params as unknown[]);
    return Promise.resolve({ rows: [], numAffectedRows: BigInt(changes) });
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Per statement: builds a row object from the row's values, in column order. */
const rowBuilders = new WeakMap<SQLite.Statement, (values: unknown[]) => unknown>();

/**
 * A read's rows as objects, like `stmt.all()`, built in JavaScript. better-sqlite3 makes each
 * row object through V8's C++ API, one slow-path property definition per column; it makes a
 * row of values (raw mode) cheaply, and an object literal of a fixed shape costs next to
 * nothing. The statement may be shared with Kysely's driver, so raw mode is switched off again.
 */
function readRows<R>(stmt: SQLite.Statement, params: readonly unknown[]): R[] {
  let build = rowBuilders.get(stmt);
  if (!build) {
    build = rowBuilder(stmt.columns().map((c) => c.name));
    rowBuilders.set(stmt, build);
  }
  stmt.raw(true);
  let rows: unknown[][];
  try {
    rows = (params.length <= SPREAD_MAX ? stmt.all(...params) : stmt.all(params as unknown[])) as unknown[][];
  } finally {
    stmt.raw(false);
  }
  const out = new Array<R>(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = build(rows[i] as unknown[]) as R;
  return out;
}

/**
 * `(v) => ({ "col0": v[0], "col1": v[1], ... })`, compiled once per statement so that every row
 * shares one object shape. The names are our own SQL's column names, written as JSON string
 * literals; a repeated name keeps its last value, as better-sqlite3's own rows do.
 */
function rowBuilder(names: string[]): (values: unknown[]) => unknown {
  const fields = names.map((n, i) => `${JSON.stringify(n)}: v[${i}]`).join(', ');
  return new Function('v', `return { ${fields} };`) as (values: unknown[]) => unknown;
}
