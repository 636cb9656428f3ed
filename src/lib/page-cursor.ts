import { Errors } from '../errors.js';
import { storable } from './unstorable.js';

/** Opaque paging cursors: base64url JSON of the last row's sort key. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

/** Decodes a cursor made by `encodeCursor`; a forged or garbled one is a 400. */
export function decodeCursor<T>(cursor: string, valid: (v: unknown) => boolean): T {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw Errors.invalidRequest('cursor is not valid');
  }
  // A forged cursor may hide U+0000 in base64, past the URL's %00 check: PostgreSQL would
  // refuse it with a 500.
  if (!storable(value) || !valid(value)) throw Errors.invalidRequest('cursor is not valid');
  return value as T;
}
