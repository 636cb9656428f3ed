import { randomHex } from '../lib/ids.js';

/** Trace id for `x-trace-id`: time prefix (sortable in logs) plus 64 random bits. */
export function newTraceId(): string {
  return `${Date.now().toString(36)}${randomHex(16)}`;
}
