import type { Clock } from '../lib/clock.js';
import { outcome, refill, type RateLimiter, type RateLimitPolicy, type TakeResult } from './limiter.js';

/**
 * Buckets in this process's memory: right for one instance (the embedded default). With
 * several instances each would allow the full rate, so REDIS_URL must be set there.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(private readonly clock: Clock, private readonly maxBuckets = 100_000) {}

  async take(policy: RateLimitPolicy): Promise<TakeResult> {
    const now = this.clock.now();
    const b = this.buckets.get(policy.key);
    let tokens = b ? refill(b.tokens, b.at, now, policy.perSecond) : policy.perSecond;
    const allowed = tokens >= 1;
    if (allowed) tokens -= 1;
    // A full bucket carries no information: dropping it bounds memory (IP keys are unbounded).
    if (this.buckets.size >= this.maxBuckets && !b) this.evictFull(now, policy.perSecond);
    this.buckets.set(policy.key, { tokens, at: now });
    return outcome(tokens, allowed, policy.perSecond);
  }

  private evictFull(now: number, perSecond: number): void {
    for (const [k, v] of this.buckets) if (refill(v.tokens, v.at, now, perSecond) >= perSecond || now - v.at > 60_000) this.buckets.delete(k);
    if (this.buckets.size >= this.maxBuckets) this.buckets.clear();
  }

  async close(): Promise<void> {}
}
