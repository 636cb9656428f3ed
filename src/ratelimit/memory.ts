import type { Clock } from '../lib/clock.js';
import { capacityOf, outcome, refill, type RateLimiter, type RateLimitPolicy, type TakeResult } from './limiter.js';

interface Bucket {
  tokens: number;
  at: number;
  perSecond: number;
  capacity: number;
}

/**
 * Buckets in this process's memory: right for one instance (the embedded default). With
 * several instances each would allow the full rate, so REDIS_URL must be set there.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly clock: Clock, private readonly maxBuckets = 100_000) {}

  take(policy: RateLimitPolicy): TakeResult {
    const now = this.clock.now();
    const { key, perSecond } = policy;
    const capacity = capacityOf(policy);
    const b = this.buckets.get(key);
    let tokens = b ? refill(b.tokens, b.at, now, perSecond, capacity) : capacity;
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    if (b) {
      // Updated in place: no new bucket per request.
      b.tokens = tokens;
      b.at = now;
      b.perSecond = perSecond;
      b.capacity = capacity;
    } else {
      if (this.buckets.size >= this.maxBuckets) this.evictFull(now);
      this.buckets.set(key, { tokens, at: now, perSecond, capacity });
    }
    return outcome(tokens, allowed, perSecond, capacity);
  }

  peek(policy: RateLimitPolicy): TakeResult {
    const capacity = capacityOf(policy);
    const b = this.buckets.get(policy.key);
    const tokens = b ? refill(b.tokens, b.at, this.clock.now(), policy.perSecond, capacity) : capacity;
    return outcome(tokens, tokens >= 1, policy.perSecond, capacity);
  }

  /** A full bucket carries no information (a missing one is full): dropping it bounds memory, as IP keys are unbounded. */
  private evictFull(now: number): void {
    for (const [k, v] of this.buckets) if (refill(v.tokens, v.at, now, v.perSecond, v.capacity) >= v.capacity) this.buckets.delete(k);
    // Every bucket in use (a flood of distinct addresses): start over rather than grow without bound.
    if (this.buckets.size >= this.maxBuckets) this.buckets.clear();
  }

  async close(): Promise<void> {}
}
