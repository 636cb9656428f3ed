export interface HostLimitOptions {
  /** The floor: the limit never drops below this (NOTIFY_PER_HOST_CONCURRENCY_MIN). */
  min: number;
  /** The ceiling (NOTIFY_PER_HOST_CONCURRENCY). */
  max: number;
}

/** What one attempt to the host showed. */
export interface HostAnswer {
  /** The host answered in time with a status that is not a server error or 429. */
  ok: boolean;
  /**
   * The host's share of the attempt's time (SendResult.hostMs): without the time the service's
   * own event loop was busy while the answer waited to be read, so that the service's own load
   * does not read as the host slowing down and shrink its limit.
   */
  latencyMs: number;
  /** Attempts in flight to the host when this one ended (itself included). */
  inflight: number;
}

/** The limit a host starts at: a new host is neither trusted with the ceiling nor starved. */
const START = 16;
const DECREASE = 0.7;
/** Latency counts as rising when the recent average exceeds the host's usual one this much... */
const RISE_FACTOR = 2;
/** ...and by at least this many ms (a host answering in 1 ms or 3 ms is answering at once). */
const RISE_MIN_MS = 20;
/** Weights of a new latency in the recent and the usual average. */
const RECENT_WEIGHT = 0.2;
const USUAL_WEIGHT = 0.02;

/**
 * How many notification attempts may be in flight to one host, adapted to how it answers
 * (additive increase, multiplicative decrease, as adaptive concurrency limits in proxies do):
 * - grows while the host answers quickly and successfully, and the limit is in use (at least
 *   half of it in flight): by one per answer until the first decrease (slow start: doubling
 *   each round), then by one per round of `limit` answers;
 * - shrinks by 30 % on an error or a time-out, or when the recent latency rises well above
 *   the host's usual one, at most once per round (the answers to requests sent before a
 *   decrease say nothing about the new limit);
 * - stays between the operator's floor and ceiling.
 * Pure: the dispatcher feeds it answers; tested without a clock or a network.
 */
export class HostLimit {
  private current: number;
  /** Fractional growth in congestion avoidance (one per round of `limit` answers). */
  private credit = 0;
  private slowStart = true;
  /** Answers to wait for before the next decrease may happen. */
  private holdOff = 0;
  private recentMs = -1;
  private usualMs = -1;

  constructor(private readonly o: HostLimitOptions) {
    this.current = Math.max(o.min, Math.min(o.max, START));
  }

  get limit(): number {
    return this.current;
  }

  record(a: HostAnswer): number {
    const rising = this.noteLatency(a.latencyMs);
    if (this.holdOff > 0) this.holdOff--;
    if (!a.ok || rising) {
      if (this.holdOff === 0) {
        this.current = Math.max(this.o.min, Math.floor(this.current * DECREASE));
        this.slowStart = false;
        this.credit = 0;
        this.holdOff = a.inflight;
      }
      return this.current;
    }
    // A limit not in use says nothing about whether the host could take more.
    if (a.inflight * 2 < this.current) return this.current;
    if (this.slowStart) this.current = Math.min(this.o.max, this.current + 1);
    else if ((this.credit += 1 / this.current) >= 1) {
      this.credit = 0;
      this.current = Math.min(this.o.max, this.current + 1);
    }
    return this.current;
  }

  /** Updates the averages; whether the recent latency rose well above the usual one. */
  private noteLatency(ms: number): boolean {
    if (this.usualMs < 0) {
      this.recentMs = this.usualMs = ms;
      return false;
    }
    this.recentMs += (ms - this.recentMs) * RECENT_WEIGHT;
    this.usualMs += (ms - this.usualMs) * USUAL_WEIGHT;
    return this.recentMs > this.usualMs * RISE_FACTOR && this.recentMs - this.usualMs > RISE_MIN_MS;
  }
}
