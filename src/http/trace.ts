import { randomHex } from '../lib/ids.js';

// Requests in the same millisecond share the prefix: the time is a double (past 2^31), and V8
// writes a double in base 36 in its runtime, ~2,000 instructions (callgrind). Under load several
// requests fall in one millisecond.
let prefixMs = -1;
let prefix = '';

/** Trace id for `x-trace-id`: time prefix (sortable in logs) plus 64 random bits. */
export function newTraceId(): string {
  const now = Date.now();
  if (now !== prefixMs) {
    prefixMs = now;
    prefix = now.toString(36);
  }
  return prefix + randomHex(16);
}
