import { randomBytes, randomInt } from 'node:crypto';

/**
 * Time-ordered 64-bit ids (snowflake layout): 41 bits of ms since 2024-01-01, 10 bits of node
 * id, 12 bits of sequence. Time order keeps B-tree inserts at the right edge (faster than
 * random keys) and makes "newest first" an index scan. The node id comes from NODE_ID, or is
 * random per process; the primary key is the final guard against a cross-node collision.
 */
const EPOCH = 1_704_067_200_000n; // 2024-01-01T00:00:00Z

export class IdGenerator {
  private lastMs = -1;
  private seq = 0;
  constructor(private readonly nodeId: number = randomInt(1024)) {}

  next(now = Date.now()): string {
    let ms = Math.max(now, this.lastMs);
    if (ms === this.lastMs) {
      this.seq = (this.seq + 1) & 0xfff;
      if (this.seq === 0) ms = this.lastMs + 1; // borrow the next ms when a ms is exhausted
    } else {
      this.seq = 0;
    }
    this.lastMs = ms;
    const id = ((BigInt(ms) - EPOCH) << 22n) | (BigInt(this.nodeId) << 12n) | BigInt(this.seq);
    return id.toString();
  }
}

/** Unix ms encoded in a snowflake id. */
export function idTime(id: string): number {
  return Number((BigInt(id) >> 22n) + EPOCH);
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

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

/** Uniformly random base62 string (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = randomByte();
    if (b < 248) out += BASE62[b % 62];
  }
  return out;
}

/** Readable-prefix id for internal records: `ntf_...`, `key_...`, time-ordered. */
export function prefixedId(prefix: string, gen: IdGenerator): string {
  return `${prefix}_${BigInt(gen.next()).toString(36).padStart(13, '0')}${randomBase62(4)}`;
}

const HEX = Buffer.from('0123456789abcdef', 'latin1');
/**
 * Writes `length` random lower-case hex digits (even) from the pooled CSPRNG bytes into `target`
 * at `start`. Callers read the buffer out as one flat string, not one built by concatenation.
 */
export function writeRandomHex(target: Buffer, start: number, length: number): void {
  for (let i = start; i < start + length; i += 2) {
    const b = randomByte();
    target[i] = HEX[b >> 4]!;
    target[i + 1] = HEX[b & 15]!;
  }
}
