import { writeRandomHex, writeUint } from '../lib/ids.js';

// The id is written into one buffer and read out as one flat string. Built by concatenation it
// would be a V8 cons string, and Node's check of every header value (a regular expression) runs
// on a cons string through V8's runtime, several times the flat string's cost.
const text = Buffer.alloc(32);

// Requests in the same millisecond share the prefix, the time in base 36, written digit by digit
// (writeUint) so that it ends where the random part begins.
const PREFIX_END = 16;
let prefixMs = -1;
let prefixStart = PREFIX_END;

/** Trace id for `x-trace-id`: time prefix (sortable in logs) plus 64 random bits. */
export function newTraceId(): string {
  const now = Date.now();
  if (now !== prefixMs) {
    prefixMs = now;
    prefixStart = writeUint(text, PREFIX_END, now, 36);
  }
  writeRandomHex(text, PREFIX_END, 16);
  return text.toString('latin1', prefixStart, PREFIX_END + 16);
}
