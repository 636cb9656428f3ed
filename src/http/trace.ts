import { writeRandomHex } from '../lib/ids.js';

// The id is written into one buffer and read out as one flat string. Built by concatenation it
// was a V8 cons string, and Node's check of every header value (a regular expression) runs on a
// cons string through V8's runtime: ~1,500 instructions, ~6 times the flat string's cost.
const text = Buffer.alloc(32);

// Requests in the same millisecond share the prefix. The time is written in base 36 here, digit
// by digit: Number#toString(36) of a double (past 2^31) runs in V8's runtime, ~2,000
// instructions (callgrind).
let prefixMs = -1;
let prefixLength = 0;

/** Trace id for `x-trace-id`: time prefix (sortable in logs) plus 64 random bits. */
export function newTraceId(): string {
  const now = Date.now();
  if (now !== prefixMs) {
    prefixMs = now;
    prefixLength = writeBase36(text, now);
  }
  writeRandomHex(text, prefixLength, 16);
  return text.toString('latin1', 0, prefixLength + 16);
}

const DIGITS36 = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz', 'latin1');

/**
 * Writes the non-negative integer `n` (below 2^53) in base 36 at the start of `target`, as
 * `n.toString(36)` would, and returns the number of digits. Exact: a quotient of integers below
 * 2^53 by 36, floored, is exact in a double.
 */
export function writeBase36(target: Buffer, n: number): number {
  let length = 1;
  for (let rest = Math.floor(n / 36); rest > 0; rest = Math.floor(rest / 36)) length++;
  for (let i = length - 1, rest = n; i >= 0; i--) {
    const q = Math.floor(rest / 36);
    target[i] = DIGITS36[rest - q * 36]!;
    rest = q;
  }
  return length;
}
