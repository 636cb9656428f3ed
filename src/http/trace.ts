import { randomBytes } from 'node:crypto';

/** Trace id for `x-trace-id`: time prefix (sortable in logs) plus randomness. */
export function newTraceId(): string {
  return `${Date.now().toString(36)}${randomBytes(8).toString('hex')}`;
}
