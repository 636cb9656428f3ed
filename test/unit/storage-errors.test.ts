import { describe, expect, it } from 'vitest';
import { isStorageUnavailable } from '../../src/db/index.js';

// SQLite's failures that mean "the storage cannot be used right now" answer 503 (retryable),
// not 500 (PROTOCOL 2): a full disk, an I/O error, a lock held elsewhere, a file that cannot be
// opened or written. better-sqlite3 reports SQLite's extended result codes (SQLITE_IOERR_WRITE,
// SQLITE_BUSY_SNAPSHOT, ...), which count as their primary code.
describe('isStorageUnavailable: SQLite result codes', () => {
  it.each([
    'SQLITE_FULL',
    'SQLITE_IOERR',
    'SQLITE_IOERR_WRITE',
    'SQLITE_IOERR_FSYNC',
    'SQLITE_IOERR_SHORT_READ',
    'SQLITE_LOCKED',
    'SQLITE_LOCKED_SHAREDCACHE',
    'SQLITE_BUSY',
    'SQLITE_BUSY_SNAPSHOT',
    'SQLITE_BUSY_TIMEOUT',
    'SQLITE_CANTOPEN',
    'SQLITE_CANTOPEN_ISDIR',
    'SQLITE_READONLY',
    'SQLITE_READONLY_DBMOVED',
  ])('%s is unavailability (503)', (code) => {
    expect(isStorageUnavailable(Object.assign(new Error('sqlite failed'), { code }))).toBe(true);
  });

  it.each(['SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_ERROR', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG', 'SQLITE_RANGE'])(
    '%s is not (a fault of the request or of the code: 4xx or 500)',
    (code) => {
      expect(isStorageUnavailable(Object.assign(new Error('sqlite failed'), { code }))).toBe(false);
    },
  );
});
