import { describe, expect, it } from 'vitest';
import { isStorageUnavailable } from '../../src/db/index.js';

describe('isStorageUnavailable (503 instead of 500)', () => {
  it.each(['57P01', '57P03', '08006', '08001', '53300', '28P01', '3D000', 'ECONNREFUSED', 'ECONNRESET', 'SQLITE_BUSY'])('%s is unavailability', (code) => {
    expect(isStorageUnavailable({ code })).toBe(true);
  });
  it.each(['23505', '42P01', '22P02', 'SQLITE_CONSTRAINT_UNIQUE', undefined])('%s is not', (code) => {
    expect(isStorageUnavailable({ code })).toBe(false);
  });
  it('recognises a dropped connection by its message', () => {
    expect(isStorageUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
  });
});
