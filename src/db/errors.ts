/** The database cannot be opened or reached (at start): the cause's message says why. */
export class DatabaseUnusableError extends Error {
  constructor(cause: unknown) {
    const e = cause as { message?: string; code?: string } | null;
    super(e?.message || e?.code || String(cause), { cause });
    this.name = 'DatabaseUnusableError';
  }
}

const UNREACHABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);
const UNREACHABLE_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|not queryable|Cannot use a pool after calling end/;

/**
 * True when PostgreSQL ended a statement for taking too long: the statement time-out
 * (DATABASE_STATEMENT_TIMEOUT_MS; 57014 query_canceled, also an operator's pg_cancel_backend) or
 * a lock time-out (55P03). Retryable, like the database being unreachable.
 */
export function isStorageTimeout(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === '57014' || code === '55P03';
}

/**
 * True when an error means the database cannot be used right now (down, unreachable, gone,
 * out of connections, locked, disk failing): PROTOCOL 2 answers such failures 503, retryable,
 * rather than 500.
 */
export function isStorageUnavailable(e: unknown): boolean {
  const err = e as { code?: unknown; message?: unknown } | null;
  const code = typeof err?.code === 'string' ? err.code : '';
  if (UNREACHABLE_ERRNO.has(code)) return true;
  // PostgreSQL SQLSTATE: 08 connection exception, 53 insufficient resources, 57P operator
  // intervention (shutdown), 3D000 database does not exist, 28 authorization failure, 42P01
  // undefined table (the database was replaced by an unmigrated one: /readyz says so too).
  if (/^(08[0-9A-Z]{3}|53[0-9A-Z]{3}|57P[0-9A-Z]{2}|28[0-9A-Z]{3}|3D000|42P01|25P03)$/.test(code)) return true;
  if (isStorageTimeout(e)) return true;
  if (/^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY)/.test(code)) return true;
  return typeof err?.message === 'string' && (UNREACHABLE_MESSAGE.test(err.message) || /^no such table: /.test(err.message));
}
