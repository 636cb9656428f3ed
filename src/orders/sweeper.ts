import type { Clock } from '../lib/clock.js';
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
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  /** Set by stop(): a sweep in progress finishes the order at hand and returns. */
  private halting = false;

  constructor(private readonly d: SweeperDeps) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.halting = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.halting = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
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
        if (this.halting) return expired;
        const r = await store.transaction((trx) => lifecycle.expire(trx, id, now));
        if (r.changed) expired++;
      }
      if (ids.length < batch || this.halting) return expired;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.sweepOnce()
        .then(
          () => undefined,
          (err) => this.d.onError?.(err),
        )
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, this.d.intervalMs);
    this.timer.unref();
  }
}
