/**
 * The adaptive in-progress limit of load shedding (src/http/adaptive-limit.ts): it shrinks only
 * when the process is saturated AND slow, holds when requests wait on something else, and
 * grows back to MAX_INFLIGHT_REQUESTS once answers are fast again. Windows are fed by hand:
 * no clock, no timers.
 */
import { describe, expect, it } from 'vitest';
import { AdaptiveLimit } from '../../src/http/adaptive-limit.js';

const window = (limit: AdaptiveLimit, latencies: number[], saturated: boolean, lagMs = 0) => {
  for (const ms of latencies) limit.record(ms);
  return limit.endWindow(saturated, lagMs);
};
const fast = Array.from({ length: 100 }, () => 5);
const slow = (share: number) => Array.from({ length: 100 }, (_, i) => (i < share * 100 ? 200 : 5));

describe('AdaptiveLimit', () => {
  it('starts at the ceiling and stays there while answers are fast', () => {
    const l = new AdaptiveLimit({ max: 256, min: 8, targetMs: 50 });
    expect(l.limit).toBe(256);
    expect(window(l, fast, true)).toBe(256);
    expect(window(l, fast, false)).toBe(256);
    expect(window(l, [], true)).toBe(256);
  });

  it('shrinks by a fifth per saturated, slow window, down to the floor', () => {
    const l = new AdaptiveLimit({ max: 256, min: 8, targetMs: 50 });
    expect(window(l, slow(0.5), true)).toBe(204);
    expect(window(l, slow(0.5), true)).toBe(163);
    for (let i = 0; i < 30; i++) window(l, slow(1), true);
    expect(l.limit).toBe(8);
  });

  it('counts a window slow when more than 5 % of its answers exceed the target (p95)', () => {
    const l = new AdaptiveLimit({ max: 100, min: 1, targetMs: 50 });
    expect(window(l, slow(0.05), true)).toBe(100); // exactly 5 %: not slow
    expect(window(l, slow(0.06), true)).toBe(80);
    // the bound is "over the target": an answer at exactly the target is in time
    expect(window(l, Array.from({ length: 10 }, () => 50), true)).toBe(88);
  });

  it('counts a long event-loop turn (over half the target) as slow: requests wait before they are read', () => {
    const l = new AdaptiveLimit({ max: 100, min: 1, targetMs: 50 });
    expect(window(l, fast, true, 25)).toBe(100);
    expect(window(l, fast, true, 26)).toBe(80);
    expect(window(l, [], true, 40)).toBe(64);
  });

  it('holds when slow answers come from waiting on something else (event loop not saturated)', () => {
    const l = new AdaptiveLimit({ max: 256, min: 8, targetMs: 50 });
    window(l, slow(1), true);
    expect(l.limit).toBe(204);
    expect(window(l, slow(1), false)).toBe(204);
    expect(window(l, slow(1), false, 500)).toBe(204);
  });

  it('grows back by a tenth (at least one) per fast window, up to the ceiling', () => {
    const l = new AdaptiveLimit({ max: 256, min: 8, targetMs: 50 });
    for (let i = 0; i < 30; i++) window(l, slow(1), true);
    expect(l.limit).toBe(8);
    expect(window(l, fast, true)).toBe(9);
    expect(window(l, fast, true)).toBe(10);
    let windows = 2;
    while (l.limit < 256) {
      window(l, fast, false);
      windows++;
    }
    expect(l.limit).toBe(256);
    expect(windows).toBeLessThan(40); // about 4 s at 100 ms windows
  });

  it('never goes above the ceiling or below the floor when they meet', () => {
    const l = new AdaptiveLimit({ max: 2, min: 2, targetMs: 50 });
    expect(window(l, slow(1), true)).toBe(2);
    expect(window(l, fast, true)).toBe(2);
  });
});
