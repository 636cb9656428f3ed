import type { Logger } from 'pino';
import { isApiError } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import { PeriodicJob } from '../../lib/periodic-job.js';
import { GooglePurchases, playApp } from './purchases.js';
import type { GooglePurchaseRow, GooglePurchaseStore } from './store.js';

export interface GoogleConsumerDeps {
  purchases: GooglePurchases;
  store: GooglePurchaseStore;
  clock: Clock;
  log: Logger;
  intervalMs: number;
  batchSize?: number;
}

/** An owed purchase is given up this long after it was recorded (Google refunds it after three days). */
const GIVE_UP_MS = 7 * 86_400_000;

/**
 * Background job: settles the Google Play purchases still owed (google_purchases.state
 * `owed`): recorded but not consumed because Google failed, or the process stopped, between
 * the payment and the consume. Each is taken by one instance at a time (a guarded update of
 * its next attempt), asked of Google again and settled the same way as a submission (the
 * payment applies at most once), then consumed; on failure it waits twice as long as before,
 * up to an hour.
 */
export class GoogleConsumer {
  private readonly job: PeriodicJob;

  constructor(private readonly d: GoogleConsumerDeps) {
    this.job = new PeriodicJob(() => this.runOnce(), d.intervalMs, (err) => d.log.error({ err }, 'Google consume job failed'));
  }

  start(): void {
    this.job.start();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  /** One pass over the due purchases; returns how many it consumed. */
  async runOnce(): Promise<number> {
    const { store, clock } = this.d;
    let consumed = 0;
    for (const row of await store.due(clock.now(), this.d.batchSize ?? 100)) {
      if (this.job.halting) break;
      const now = clock.now();
      if (!(await store.claim(row, now + GooglePurchases.retryDelay(row.attempts), now))) continue;
      if (await this.attempt(row)) consumed++;
    }
    return consumed;
  }

  private async attempt(row: GooglePurchaseRow): Promise<boolean> {
    const { purchases, store, clock, log } = this.d;
    try {
      const { channel } = await purchases.app(row.game_id);
      const p = await purchases.fetch(row.game_id, playApp(channel), row.product_id, row.purchase_token);
      await purchases.settle(row.game_id, channel, row.product_id, row.purchase_token, p);
      const after = await store.find(row.purchase_token);
      return after?.state === 'consumed';
    } catch (e) {
      const message = isApiError(e) ? e.message : String(e);
      const now = clock.now();
      // Refused for good (not purchased, no longer known to Google, the order's state): nothing
      // is owed any more; anything else (Google unavailable, the channel switched off for a
      // while): tried again later, until given up.
      const final = (isApiError(e) && (e.status === 422 || e.status === 409)) || now - row.created_at > GIVE_UP_MS;
      if (final) await store.settle(row.purchase_token, 'rejected', now, message);
      else await store.noteError(row.purchase_token, message, now);
      log.warn({ game_id: row.game_id, order_id: row.order_id, attempts: row.attempts + 1, final, err: message }, 'Google Play purchase not settled');
      return false;
    }
  }
}
