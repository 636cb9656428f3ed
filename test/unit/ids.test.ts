import { describe, expect, it } from 'vitest';
import { IdGenerator, idTime, prefixedId, randomBase62, writeUint } from '../../src/lib/ids.js';

const EPOCH = 1_704_067_200_000n;
/** The snowflake id as BigInt arithmetic writes it (the implementation before the digit writer). */
const reference = (ms: number, node: number, seq: number) => ((BigInt(ms) - EPOCH) << 22n) | (BigInt(node) << 12n) | BigInt(seq);

/** Ids of `gen` at `ms`: the first has sequence 0, the next 1, ... */
const MS = [
  Number(EPOCH),
  Number(EPOCH) + 1,
  Date.UTC(2026, 10, 25, 8, 0, 0, 123),
  Number(EPOCH) + 2 ** 32,
  Number(EPOCH) + 2 ** 41 - 1, // the last millisecond of the 41-bit time field
];

describe('IdGenerator', () => {
  it.each([0, 1, 517, 1023])('writes the decimal id BigInt arithmetic writes (node %i)', (node) => {
    for (const ms of MS) {
      const gen = new IdGenerator(node);
      for (let seq = 0; seq < 3; seq++) expect(gen.next(ms)).toBe(reference(ms, node, seq).toString());
    }
  });

  it('borrows the next millisecond when 4096 ids exhaust one, and stays ordered', () => {
    const gen = new IdGenerator(1023);
    const ms = Date.UTC(2026, 10, 25);
    const ids = Array.from({ length: 4097 }, () => gen.next(ms));
    expect(ids[4095]).toBe(reference(ms, 1023, 4095).toString());
    expect(ids[4096]).toBe(reference(ms + 1, 1023, 0).toString());
    expect(idTime(ids[4096]!)).toBe(ms + 1);
    for (let i = 1; i < ids.length; i++) expect(BigInt(ids[i]!) > BigInt(ids[i - 1]!)).toBe(true);
    // A clock that steps back keeps the ids increasing.
    expect(BigInt(gen.next(ms - 10_000)) > BigInt(ids[4096]!)).toBe(true);
  });

  it('follows BigInt for a clock before the epoch', () => {
    const ms = Number(EPOCH) - 5;
    expect(new IdGenerator(3).next(ms)).toBe(reference(ms, 3, 0).toString());
  });
});

describe('prefixedId', () => {
  it('is the prefix, the time-ordered id in 13 base-36 digits, and 4 base62 characters', () => {
    const gen = new IdGenerator(7);
    const before = Date.now();
    const ids = Array.from({ length: 2000 }, () => prefixedId('oev', gen));
    for (const id of ids) expect(id).toMatch(/^oev_[0-9a-z]{13}[0-9A-Za-z]{4}$/);
    // The base-36 part is the snowflake id, zero-padded: ids sort by creation.
    const fromBase36 = (digits: string) => [...digits].reduce((v, c) => v * 36n + BigInt(parseInt(c, 36)), 0n);
    const first = fromBase36(ids[0]!.slice(4, 17));
    expect(Number((first >> 22n) + EPOCH)).toBeGreaterThanOrEqual(before);
    expect(Number((first >> 12n) & 1023n)).toBe(7);
    const parts = ids.map((id) => id.slice(4, 17));
    expect([...parts].sort()).toEqual(parts);
    expect(new Set(ids).size).toBe(ids.length);
    expect(prefixedId('notification', gen)).toMatch(/^notification_[0-9a-z]{13}[0-9A-Za-z]{4}$/);
    expect(prefixedId('p'.repeat(46), gen)).toHaveLength(64);
    expect(() => prefixedId('p'.repeat(47), gen)).toThrow(RangeError);
  });
});

describe('randomBase62', () => {
  it('draws every base62 character, and only those, at the length asked', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const s = randomBase62(32);
      expect(s).toMatch(/^[0-9A-Za-z]{32}$/);
      for (const c of s) seen.add(c);
    }
    expect(seen.size).toBe(62);
    expect(randomBase62(0)).toBe('');
    expect(randomBase62(64)).toHaveLength(64);
    expect(() => randomBase62(65)).toThrow(RangeError);
  });
});

describe('writeUint', () => {
  it.each([10, 36])('writes base %i as Number#toString does, at every digit-count edge, ending where asked', (radix) => {
    const buf = Buffer.alloc(40);
    const values = [0, 1, radix - 1, radix, radix + 1, radix ** 2 - 1, radix ** 2, Date.UTC(2026, 10, 25), 36 ** 8 - 1, 36 ** 8, 2 ** 22 - 1, 2 ** 22, Number.MAX_SAFE_INTEGER];
    for (let k = 1; k <= 52; k++) values.push(2 ** k - 1, 2 ** k, 3 ** Math.min(k, 33));
    for (const n of values) {
      const start = writeUint(buf, 30, n, radix);
      expect(buf.toString('latin1', start, 30)).toBe(n.toString(radix));
    }
  });
});
