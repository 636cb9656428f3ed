import { describe, expect, it } from 'vitest';
import { isStorageUnavailable } from '../../src/db/index.js';

describe('isStorageUnavailable (503 instead of 500)', () => {
  // 42P01 (no such table): the database was replaced by an unmigrated one (/readyz says so).
  it.each(['57P01', '57P03', '08006', '08001', '53300', '28P01', '3D000', '42P01', 'ECONNREFUSED', 'ECONNRESET', 'SQLITE_BUSY'])('%s is unavailability', (code) => {
    expect(isStorageUnavailable({ code })).toBe(true);
  });
  it.each(['23505', '42703', '22P02', 'SQLITE_CONSTRAINT_UNIQUE', undefined])('%s is not', (code) => {
    expect(isStorageUnavailable({ code })).toBe(false);
  });
  it('recognises a dropped connection by its message', () => {
    expect(isStorageUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isStorageUnavailable(Object.assign(new Error('no such table: orders'), { code: 'SQLITE_ERROR' }))).toBe(true);
  });
});
