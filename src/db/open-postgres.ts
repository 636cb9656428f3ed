import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import type { DB } from './schema.js';
import type { Database, DatabaseOptions } from './database.js';

/**
 * The service's type parsers, given to its pool's connections only (not set on the pg module for
 * the whole process): int8 (bigint) columns hold Unix ms and minor units, well inside Number's
 * exact range, and are read as numbers.
 */
const INT8 = 20;
export const SERVICE_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 && format !== 'binary' ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};
export function openPostgres(url: string, options: DatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: url,
    types: SERVICE_TYPES,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: 5000,
  });
  const timeouts = options.statementTimeoutMs ? timeoutStatements(options.statementTimeoutMs) : '';
  // A client losing its connection (database restart) must not crash the process: the pool
  // reports idle clients' errors, and a client in use also emits 'error' besides failing its
  // query (the query's rejection is what the request sees: 503).
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
    // The time-outs, set before the connection's first query (the pool hands it out after this
    // event; a client runs its queries in order): a request waiting on a lock someone else
    // holds (an operator's ALTER TABLE, a stuck transaction) fails with 503 instead of holding
    // its pool connection, and a transaction left open cannot hold its locks forever. SET, not
    // startup parameters: PgBouncer refuses a connection that sends those.
    if (timeouts) client.query(timeouts).catch(() => {});
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    transaction: (fn, options) =>
      db.transaction().execute(async (trx) => {
        // SET LOCAL: for this transaction only, on its connection (also behind PgBouncer).
        if (options?.large && timeouts) await sql.raw(timeoutStatements(0, 'local')).execute(trx);
        return fn(trx);
      }),
    oneStatement: (fn) => fn(db),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    sessionTimeouts: timeouts,
    close: () => db.destroy(),
  };
}
export /**
 * PostgreSQL: the SET statements that give a connection these time-outs (ms; 0: none), for its
 * session or (`local`) for the rest of the transaction.
 */
function timeoutStatements(ms: number, scope: 'session' | 'local' = 'session'): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new Error(`statement time-out must be a whole number of ms (got ${ms})`);
  const set = scope === 'local' ? 'set local' : 'set';
  return `${set} statement_timeout = ${ms}; ${set} idle_in_transaction_session_timeout = ${ms}`;
}
