import type { Clock } from '../lib/clock.js';
import { PeriodicJob } from '../lib/periodic-job.js';
import type { OrderLifecycle } from './lifecycle.js';
import type { OrderStore } from './store.js';

export interface SweeperDeps {
  store: OrderStore;
  lifecycle: OrderLifecycle;
  clock: Clock;
  intervalMs: number;
  /** Orders expired per batch; a backlog is worked off batch after batch in one run. */
  batchSize?: number;
  onError?: (err: unknown) => void;
}

/**
 * Background job: moves `created` orders past their expires_at to `expired` (PROTOCOL 6), every
 * `intervalMs`. Each order changes in its own small transaction through the guarded lifecycle
 * update, so several service instances may sweep at once and a payment racing the sweep wins
 * or loses cleanly (a payment after expiry is still accepted, as late).
 */
export class OrderSweeper {
  private readonly job: PeriodicJob;

  constructor(private readonly d: SweeperDeps) {
    this.job = new PeriodicJob(() => this.sweepOnce(), d.intervalMs, (err) => d.onError?.(err));
  }

  start(): void {
    this.job.start();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  /** One sweep; returns how many orders it expired. */
  async sweepOnce(): Promise<number> {
    const { store, lifecycle, clock } = this.d;
    const batch = this.d.batchSize ?? 200;
    let expired = 0;
    for (;;) {
      const now = clock.now();
      const ids = await store.findExpiredIds(store.db, now, batch);
      for (const id of ids) {
        if (this.job.halting) return expired;
        const r = await store.transaction((trx) => lifecycle.expire(trx, id, now));
        if (r.changed) expired++;
      }
      if (ids.length < batch || this.job.halting) return expired;
    }
  }
}
