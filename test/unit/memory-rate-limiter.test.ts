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
});
