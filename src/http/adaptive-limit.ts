export interface AdaptiveLimitOptions {
  /** The ceiling, and the starting value: MAX_INFLIGHT_REQUESTS. */
  max: number;
  /** The floor: the limit never drops below this. */
  min: number;
  /** Admitted requests should finish within this (ms); 5 % slower than it in a window is "too slow". */
  targetMs: number;
}

/** Share of a window's requests allowed over the target before it counts as too slow (p95). */
const SLOW_SHARE = 0.05;
const DECREASE = 0.8;
const INCREASE = 0.1;

/**
 * The number of requests admitted at once, adapted to what the process can answer in time
 * (additive-increase, multiplicative-decrease, as TCP congestion control and Netflix's
 * concurrency-limits do). A fixed limit bounds admitted latency only at limit / throughput: when
 * overload makes each request slower (at 5x, refusing the excess alone takes most of the CPU), a
 * fixed 256 in flight waits for seconds. Each window (load-shedding.ts, 100 ms) the limit:
 * - shrinks by a fifth when the window was too slow AND the event loop was saturated: the
 *   process itself is the bottleneck, so admitting less makes what it admits faster;
 * - grows by a tenth (at least one) when the window was not too slow, up to `max`;
 * - holds when requests were slow on an idle event loop: they wait on a database or a GM
 *   server, and refusing others would not speed them up.
 * Pure: the caller feeds it latencies and saturation, so it is tested without a clock.
 */
export class AdaptiveLimit {
  private current: number;
  private total = 0;
  private slow = 0;

  constructor(private readonly o: AdaptiveLimitOptions) {
    this.current = o.max;
  }

  get limit(): number {
    return this.current;
  }

  /** An admitted request was answered `ms` after it was admitted. */
  record(ms: number): void {
    this.total++;
    if (ms > this.o.targetMs) this.slow++;
  }

  /**
   * Ends a window. `saturated`: the event loop was busy nearly all of it; `lagMs`: its longest
   * event-loop delay. Returns the new limit.
   */
  endWindow(saturated: boolean, lagMs: number): number {
    // A long loop turn delays every request by about that much per step (read, commit, answer),
    // also before the process even reads it, which the answered requests' own timings miss:
    // turns over half the target count as too slow.
    const tooSlow = (this.total > 0 && this.slow > this.total * SLOW_SHARE) || lagMs > this.o.targetMs / 2;
    if (tooSlow && saturated) this.current = Math.max(this.o.min, Math.floor(this.current * DECREASE));
    else if (!tooSlow) this.current = Math.min(this.o.max, this.current + Math.max(1, Math.ceil(this.current * INCREASE)));
    this.total = 0;
    this.slow = 0;
    return this.current;
  }
}
