import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { MemoryRateLimiter } from '../../src/ratelimit/memory.js';

describe('MemoryRateLimiter', () => {
  it('reports remaining tokens, retry and reset times of a token bucket', async () => {
    const clock = new ManualClock(0);
    const l = new MemoryRateLimiter(clock);
    const p = { key: 'game:a', perSecond: 4 };
    expect(await l.take(p)).toEqual({ allowed: true, remaining: 3, retryAfterMs: 0, resetMs: 250 });
    await l.take(p);
    await l.take(p);
    expect(await l.take(p)).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
    expect(await l.take(p)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 250 });
    clock.advance(100);
    expect(await l.take(p)).toMatchObject({ allowed: false, retryAfterMs: 150 });
  });

  it('bounds memory: at the cap, full buckets are dropped and busy ones kept', async () => {
    const clock = new ManualClock(0);
    const l = new MemoryRateLimiter(clock, 3);
    const busy = { key: 'ip:busy', perSecond: 1 };
    expect((await l.take(busy)).allowed).toBe(true);
    await l.take({ key: 'ip:a', perSecond: 1000 });
    await l.take({ key: 'ip:b', perSecond: 1000 });
    clock.advance(10); // a and b (rate 1000) are full again; busy (rate 1) is not
    await l.take({ key: 'ip:c', perSecond: 1000 });
    expect((await l.take(busy)).allowed).toBe(false);
  });

  it('answers without a promise, so the request path does not wait a microtask for it', () => {
    const l = new MemoryRateLimiter(new ManualClock(0));
    const r = l.take({ key: 'game:a', perSecond: 2 });
    expect(r).not.toBeInstanceOf(Promise);
    expect(r).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('a bucket with a burst of its own: holds `burst` tokens at a rate below one a second', () => {
    const clock = new ManualClock(0);
    const l = new MemoryRateLimiter(clock);
    const p = { key: 'admin-auth:a', perSecond: 3 / 60, burst: 3 };
    expect([l.take(p), l.take(p), l.take(p)].map((r) => [r.allowed, r.remaining])).toEqual([[true, 2], [true, 1], [true, 0]]);
    expect(l.take(p)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 20_000, resetMs: 60_000 });
    clock.advance(60_000 * 10); // long idle: capped at the burst, not at the rate
    expect([l.take(p), l.take(p), l.take(p), l.take(p)].map((r) => r.allowed)).toEqual([true, true, true, false]);
  });

  it('peek tells whether a token could be taken, and takes none', () => {
    const clock = new ManualClock(0);
    const l = new MemoryRateLimiter(clock);
    const p = { key: 'admin-auth:b', perSecond: 1 / 60, burst: 1 };
    expect(l.peek(p)).toMatchObject({ allowed: true, remaining: 1 });
    expect(l.peek(p)).toMatchObject({ allowed: true, remaining: 1 });
    expect(l.take(p).allowed).toBe(true);
    expect(l.peek(p)).toEqual({ allowed: false, remaining: 0, retryAfterMs: 60_000, resetMs: 60_000 });
    clock.advance(59_999);
    expect(l.peek(p).allowed).toBe(false);
    clock.advance(1);
    expect(l.peek(p).allowed).toBe(true);
    expect(l.take(p).allowed).toBe(true);
  });

  it('at the cap, a slow bucket that is not full again is kept (an address locked out stays locked out)', () => {
    const clock = new ManualClock(0);
    const l = new MemoryRateLimiter(clock, 2);
    const locked = { key: 'admin-auth:c', perSecond: 1 / 60, burst: 1 };
    l.take(locked);
    clock.advance(30_000); // half a token back: more than its rate, less than its burst
    l.take({ key: 'ip:x', perSecond: 1000 });
    clock.advance(10); // ip:x is full again
    l.take({ key: 'ip:y', perSecond: 1000 }); // at the cap: evicts the full ones only
    expect(l.take(locked).allowed).toBe(false);
  });

  it('at the cap, a slow bucket full again is dropped like any full one (so nothing else is cleared)', () => {
    const clock = new ManualClock(0);
    const l = new MemoryRateLimiter(clock, 2);
    const slow = { key: 'admin-auth:d', perSecond: 10 / 60, burst: 10 };
    const locked = { key: 'admin-auth:e', perSecond: 1 / 60, burst: 1 };
    l.take(slow);
    l.take(locked);
    clock.advance(6_000); // slow: full again (one back in 6 s); locked: a tenth back
    // At the cap: the full one goes and the new one fits; were slow kept, every bucket would be
    // in use and all of them cleared, the locked-out address's with them.
    l.take({ key: 'ip:x', perSecond: 1000 });
    expect(l.take(locked).allowed).toBe(false);
  });

  it('tells the wait in whole milliseconds without a floating-point residue (20000, not 20001)', () => {
    const clock = new ManualClock(0);
    const l = new MemoryRateLimiter(clock);
    const p = { key: 'admin-auth:f', perSecond: 2 / 60, burst: 2 };
    l.take(p);
    l.take(p);
    clock.advance(10_000); // a third of a token back: (1 - 1/3) / (1/30) s is 20 s exactly
    expect(l.peek(p)).toMatchObject({ allowed: false, retryAfterMs: 20_000, resetMs: 50_000 });
  });
});
