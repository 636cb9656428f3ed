import { randomBytes, randomInt } from 'node:crypto';

/**
 * Time-ordered 64-bit ids (snowflake layout): 41 bits of ms since 2024-01-01, 10 bits of node
 * id, 12 bits of sequence. Time order keeps B-tree inserts at the right edge (faster than
 * random keys) and makes "newest first" an index scan. The node id comes from NODE_ID, or is
 * random per process; the primary key is the final guard against a cross-node collision.
 */
const EPOCH = 1_704_067_200_000n; // 2024-01-01T00:00:00Z
const EPOCH_MS = Number(EPOCH);
/** 2^22: the id's low 22 bits are the node id and the sequence. */
const LOW = 4_194_304;

// Ids are written into this buffer and read out as one flat string. Built by concatenation
// they were V8 cons strings, for V8 to flatten again wherever they are used (hashing, binding
// as a database parameter, a header check); a token secret appended one character at a time
// was a chain of 20 of them. Single-threaded: each function reads it out before returning.
const scratch = Buffer.alloc(64);

export class IdGenerator {
  private lastMs = -1;
  private seq = 0;
  constructor(private readonly nodeId: number = randomInt(1024)) {}

  /** The next id as a decimal string (order ids). */
  next(now = Date.now()): string {
    this.advance(now);
    const start = writeDigits(scratch, scratch.length, this.lastMs - EPOCH_MS, this.nodeId * 4096 + this.seq, 10, 0);
    return scratch.toString('latin1', start, scratch.length);
  }

  /**
   * Writes the next id in base 36, as exactly 13 digits (zero-padded), ending at `end` of
   * `target`: the time-ordered part of prefixedId.
   */
  writeNextBase36(target: Buffer, end: number): void {
    this.advance(Date.now());
    writeDigits(target, end, this.lastMs - EPOCH_MS, this.nodeId * 4096 + this.seq, 36, 13);
  }

  /**
   * After an id this generator handed out was found taken (another process given the same
   * NODE_ID hands out the same sequence): go on from a random later point of this millisecond,
   * where that process is unlikely to be, instead of the next id, which it is likely handing
   * out too.
   */
  jump(): void {
    const room = 4095 - this.seq;
    if (room < 2) {
      this.lastMs += 1;
      this.seq = randomInt(0, 2048);
    } else {
      this.seq += 1 + randomInt(0, room - 1);
    }
  }

  private advance(now: number): void {
    let ms = Math.max(now, this.lastMs);
    if (ms === this.lastMs) {
      this.seq = (this.seq + 1) & 0xfff;
      if (this.seq === 0) ms = this.lastMs + 1; // borrow the next ms when a ms is exhausted
    } else {
      this.seq = 0;
    }
    this.lastMs = ms;
  }
}

const DIGITS = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz', 'latin1');

/**
 * Writes `high * 2^22 + low` (high below 2^41: ms since EPOCH in an id; low below 2^22) in `radix`, at
 * least `width` digits, as BigInt#toString would, into `target` ending at `end`; returns where
 * the digits start. In doubles, by long division in two limbs: each step's values stay below
 * 2^53, so every one is exact. BigInt arithmetic and its conversion to text cost several
 * times more, on every order.
 */
function writeDigits(target: Buffer, end: number, high: number, low: number, radix: number, width: number): number {
  if (high < 0) {
    // A clock before 2024: BigInt's two's-complement result, as before.
    const text = ((BigInt(high) << 22n) | BigInt(low)).toString(radix).padStart(width, '0');
    return end - target.write(text, end - text.length, 'latin1');
  }
  let at = end;
  do {
    const qHigh = Math.floor(high / radix);
    const t = (high - qHigh * radix) * LOW + low;
    const qLow = Math.floor(t / radix);
    target[--at] = DIGITS[t - qLow * radix]!;
    high = qHigh;
    low = qLow;
  } while (high > 0 || low > 0);
  while (end - at < width) target[--at] = 48; // '0'
  return at;
}

/**
 * Writes the integer `n` (0 <= n < 2^53) in `radix`, as `n.toString(radix)` would, into
 * `target` ending at `end`; returns where its digits start. Number#toString with a radix runs in
 * V8's slow runtime path for a double.
 */
export function writeUint(target: Buffer, end: number, n: number, radix: number): number {
  const high = Math.floor(n / LOW);
  return writeDigits(target, end, high, n - high * LOW, radix, 0);
}

/** Unix ms encoded in a snowflake id. */
export function idTime(id: string): number {
  return Number((BigInt(id) >> 22n) + EPOCH);
}

const BASE62 = Buffer.from('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', 'latin1');

// Random bytes are drawn from the CSPRNG in 4 KiB blocks: one syscall per block, not per id.
let pool = Buffer.alloc(0);
let poolPos = 0;
function randomByte(): number {
  if (poolPos >= pool.length) {
    pool = randomBytes(4096);
    poolPos = 0;
  }
  return pool[poolPos++] as number;
}

/** Uniformly random base62 string of at most 64 characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  if (length > scratch.length) throw new RangeError(`randomBase62: at most ${scratch.length} characters`);
  writeRandomBase62(scratch, 0, length);
  return scratch.toString('latin1', 0, length);
}

function writeRandomBase62(target: Buffer, start: number, length: number): void {
  let i = start;
  while (i < start + length) {
    const b = randomByte();
    if (b < 248) target[i++] = BASE62[b % 62]!;
  }
}

/**
 * Readable-prefix id for internal records: `<prefix>_`, the time-ordered id in 13 base-36
 * digits, and 4 random base62 characters (`ntf_...`, `key_...`).
 */
export function prefixedId(prefix: string, gen: IdGenerator): string {
  if (prefix.length > scratch.length - 18) throw new RangeError(`prefixedId: prefix ${prefix} is too long`);
  const at = scratch.write(prefix, 0, 'latin1');
  scratch[at] = 95; // '_'
  gen.writeNextBase36(scratch, at + 14);
  writeRandomBase62(scratch, at + 14, 4);
  return scratch.toString('latin1', 0, at + 18);
}

/**
 * Writes `length` random lower-case hex digits (even) from the pooled CSPRNG bytes into `target`
 * at `start`. Callers read the buffer out as one flat string, not one built by concatenation.
 */
export function writeRandomHex(target: Buffer, start: number, length: number): void {
  for (let i = start; i < start + length; i += 2) {
    const b = randomByte();
    // The first 16 of the digits are the lower-case hex digits.
    target[i] = DIGITS[b >> 4]!;
    target[i + 1] = DIGITS[b & 15]!;
  }
}
