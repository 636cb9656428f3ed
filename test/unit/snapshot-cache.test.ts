import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/lib/clock.js';
import { SnapshotCache } from '../../src/lib/snapshot-cache.js';

/** A loader whose loads the test settles by hand. */
function loader() {
  const loads: { id: string; resolve: (v: string | null) => void; reject: (e: Error) => void }[] = [];
  const load = (id: string) => new Promise<string | null>((resolve, reject) => loads.push({ id, resolve, reject }));
  return { loads, load };
}

describe('SnapshotCache', () => {
  it('shares one load between concurrent misses, then answers with the plain value', async () => {
    const { loads, load } = loader();
    const cache = new SnapshotCache(new ManualClock(0), 5000, load);
    const a = cache.get('g1');
    const b = cache.get('g1');
    expect(a).toBeInstanceOf(Promise);
    expect(b).toBe(a);
    expect(loads).toHaveLength(1);
    loads[0]!.resolve('snapshot of g1');
    expect(await a).toBe('snapshot of g1');
    // Loaded: no promise (the signature check of every request reads this).
    expect(cache.get('g1')).toBe('snapshot of g1');
    expect(loads).toHaveLength(1);
  });

  it('keeps an unknown id as null, and reloads after the time-to-live or an invalidation', async () => {
    const clock = new ManualClock(0);
    const { loads, load } = loader();
    const cache = new SnapshotCache(clock, 5000, load);
    const first = cache.get('nope');
    loads[0]!.resolve(null);
    expect(await first).toBeNull();
    expect(cache.get('nope')).toBeNull();
    clock.advance(5000);
    expect(cache.get('nope')).toBeInstanceOf(Promise);
    expect(loads).toHaveLength(2);
    loads[1]!.resolve('created since');
    await cache.getAsync('nope');
    cache.invalidate('nope');
    expect(cache.get('nope')).toBeInstanceOf(Promise);
    expect(loads).toHaveLength(3);
  });

  it('keeps unknown ids apart: a flood of them neither grows past its own cap nor evicts the real snapshots', async () => {
    const { loads, load } = loader();
    const cache = new SnapshotCache(new ManualClock(0), 5000, load, 3, 2);
    const real = cache.get('g1');
    loads[0]!.resolve('snapshot of g1');
    await real;
    for (let i = 0; i < 10; i++) {
      const miss = cache.get(`unknown-${i}`);
      loads[loads.length - 1]!.resolve(null);
      expect(await miss).toBeNull();
    }
    expect(cache.get('g1')).toBe('snapshot of g1');
    // The latest unknown id is still remembered; one from before the cap was forgotten.
    expect(cache.get('unknown-9')).toBeNull();
    expect(cache.get('unknown-0')).toBeInstanceOf(Promise);
    expect(loads).toHaveLength(12);
  });

  it('forgets a failed load, so the next request retries', async () => {
    const { loads, load } = loader();
    const cache = new SnapshotCache(new ManualClock(0), 5000, load);
    const failing = cache.getAsync('g1');
    loads[0]!.reject(new Error('database unavailable'));
    await expect(failing).rejects.toThrow('database unavailable');
    const retry = cache.get('g1');
    expect(loads).toHaveLength(2);
    loads[1]!.resolve('snapshot of g1');
    expect(await retry).toBe('snapshot of g1');
  });
});
