import { describe, expect, it } from 'vitest';
import { nextAttemptAt, nominalDelay, retryDelay } from '../../src/notifications/backoff.js';

const S = 1000;
const MIN = 60 * S;

describe('notification retry schedule (as published in docs/notifications.md)', () => {
  it('grows 3x per attempt from 10 s and is capped from the 8th attempt on', () => {
    const table = [10 * S, 30 * S, 90 * S, 4.5 * MIN, 13.5 * MIN, 40.5 * MIN, 7290 * S, 21_870 * S, 21_870 * S, 21_870 * S];
    expect(table.map((_, i) => nominalDelay(i + 1, 10 * S))).toEqual(table);
    expect(nominalDelay(1000, 10 * S)).toBe(21_870 * S);
  });

  it('jitters within [d/2, d]', () => {
    expect(retryDelay(2, 10 * S, () => 0)).toBe(15 * S);
    expect(retryDelay(2, 10 * S, () => 0.999999)).toBeLessThanOrEqual(30 * S);
    expect(retryDelay(2, 10 * S, () => 0.999999)).toBeGreaterThan(29.9 * S);
    for (let i = 0; i < 200; i++) {
      const d = retryDelay(5, 10 * S);
      expect(d).toBeGreaterThanOrEqual(6.75 * MIN);
      expect(d).toBeLessThanOrEqual(13.5 * MIN);
    }
  });

  it('stops (null) when the next attempt would fall after the window', () => {
    const w = { startedAt: 0, maxAgeMs: 60 * S, baseMs: 10 * S };
    expect(nextAttemptAt(1, 0, w, () => 0)).toBe(5 * S);
    expect(nextAttemptAt(3, 15 * S, w, () => 0)).toBe(60 * S); // exactly at the end: still allowed
    expect(nextAttemptAt(3, 15 * S + 1, w, () => 0)).toBeNull();
  });

  it('makes 35 to 62 attempts over the default 7 days', () => {
    const count = (random: () => number) => {
      const w = { startedAt: 0, maxAgeMs: 7 * 86_400 * S, baseMs: 10 * S };
      let now = 0;
      for (let n = 1; ; n++) {
        const next = nextAttemptAt(n, now, w, random);
        if (next === null) return n;
        now = next;
      }
    };
    expect(count(() => 0.999999)).toBe(35);
    expect(count(() => 0)).toBe(62);
  });
});
