import { afterEach, describe, expect, it, vi } from 'vitest';
import { newTraceId } from '../../src/http/trace.js';

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
});
