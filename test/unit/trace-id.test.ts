import { afterEach, describe, expect, it, vi } from 'vitest';
import { newTraceId, writeBase36 } from '../../src/http/trace.js';

describe('x-trace-id (newTraceId)', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('starts with the current millisecond in base 36, also when the prefix is reused within a millisecond', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const t = Date.UTC(2026, 10, 25, 6, 0, 0, 1);
    vi.setSystemTime(t);
    const a = newTraceId();
    const b = newTraceId();
    expect(a.startsWith(t.toString(36))).toBe(true);
    expect(b.startsWith(t.toString(36))).toBe(true);
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[0-9a-z]+[0-9a-f]{16}$/);
    expect(a).toHaveLength(t.toString(36).length + 16);

    // The shared buffer is read out afresh for every id: earlier ids keep their value.
    const many = Array.from({ length: 1000 }, () => newTraceId());
    expect(new Set(many).size).toBe(1000);
    expect(many.every((id) => id.startsWith(t.toString(36)) && /^[0-9a-z]+[0-9a-f]{16}$/.test(id))).toBe(true);
    expect(a.startsWith(t.toString(36))).toBe(true);

    vi.setSystemTime(t + 1);
    expect(newTraceId().startsWith((t + 1).toString(36))).toBe(true);
    // A clock that steps back is followed too.
    vi.setSystemTime(t - 5000);
    expect(newTraceId().startsWith((t - 5000).toString(36))).toBe(true);
  });

  it('writes base 36 as Number#toString(36) does, at every digit-count edge', () => {
    const buf = Buffer.alloc(16);
    const values = [0, 1, 35, 36, 37, 1295, 1296, Date.UTC(2026, 10, 25), 36 ** 8 - 1, 36 ** 8, 36 ** 9 + 7, Number.MAX_SAFE_INTEGER];
    for (let k = 1; k <= 52; k++) values.push(2 ** k - 1, 2 ** k, 3 ** Math.min(k, 33));
    for (const n of values) {
      const length = writeBase36(buf, n);
      expect(buf.toString('latin1', 0, length)).toBe(n.toString(36));
    }
  });
});
