import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../../lib/clock.js';
import type { OrderStore } from '../../orders/store.js';
import { refundRequest, type ProviderPayments } from './service.js';
import { checkDelay, type ProviderPaymentRow, type ProviderPaymentStore, type ProviderRefundRow } from './store.js';

export interface ProviderPaymentJobDeps {
  store: ProviderPaymentStore;
  service: ProviderPayments;
  orders: OrderStore;
  clock: Clock;
  logger: Logger;
  intervalMs: number;
  /** Rows taken per run, of payments and of refunds each. */
  batchSize?: number;
}

/** How long a taken row is this instance's: longer than a provider request takes. */
const LEASE_MS = 60_000;
/** Orders whose payment may still be made: checked until they expire. */
const PAYABLE = new Set(['created']);

/**
 * Lost callbacks (payments.md 4): open payments at a provider are queried by our out_trade_no
 * at growing intervals until the order expires; one the provider says is paid is applied as
 * its callback would be. At expiry (or once the order is canceled, or paid another way) the
 * provider's payment is queried a last time and closed. Pending refunds are queried the same
 * way until the provider settles them. Each row is taken under a lease, so several instances
 * never query one payment at once.
 */
export class ProviderPaymentJob {
  private readonly owner = randomUUID();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;

  constructor(private readonly d: ProviderPaymentJobDeps) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One run: every due payment and refund; returns how many were checked. */
  async runOnce(): Promise<{ payments: number; refunds: number }> {
    const { store, clock } = this.d;
    const batch = this.d.batchSize ?? 100;
    const now = clock.now();
    let payments = 0;
    let refunds = 0;
    for (const row of await store.duePayments(now, batch)) {
      if (!(await store.leasePayment(row, this.owner, now, now + LEASE_MS))) continue;
      payments++;
      await this.checkPayment(row).catch((err: unknown) => this.retryPayment(row, err));
    }
    for (const row of await store.dueRefunds(now, batch)) {
      if (!(await store.leaseRefund(row, this.owner, now, now + LEASE_MS))) continue;
      refunds++;
      await this.checkRefund(row).catch((err: unknown) => this.retryRefund(row, err));
    }
    return { payments, refunds };
  }

  private async checkPayment(row: ProviderPaymentRow): Promise<void> {
    const { store, service, orders, clock } = this.d;
    const found = service.gatewayOf(row.provider);
    const order = await orders.findById(orders.db, row.order_id);
    const channel = found && order ? await service.channelOf(found.provider, row.game_id) : undefined;
    if (!found || !order || !channel) {
      await store.updatePayment(store.db, row.provider, row.order_id, { state: 'closed', updated_at: clock.now(), locked_until: 0, locked_by: null });
      return;
    }
    const state = await found.gateway.queryPayment(channel, order);
    const now = clock.now();
    if (state.state === 'paid') {
      const outcome = await service.applyPaid(row.provider, state.payment);
      this.d.logger.info({ order_id: row.order_id, provider: row.provider, outcome: outcome.status, reason: outcome.reason }, 'payment confirmed by query');
      return;
    }
    const over = !PAYABLE.has(order.status) || now >= order.expires_at;
    if (state.state === 'open' && !over) {
      await store.updatePayment(store.db, row.provider, row.order_id, { checks: row.checks + 1, next_check_at: Math.min(now + checkDelay(row.checks + 1), order.expires_at), locked_until: 0, locked_by: null, updated_at: now });
      return;
    }
    if (state.state === 'open') await found.gateway.closePayment(channel, order);
    await store.updatePayment(store.db, row.provider, row.order_id, { state: 'closed', updated_at: clock.now(), locked_until: 0, locked_by: null });
    this.d.logger.info({ order_id: row.order_id, provider: row.provider, order_status: order.status }, 'provider payment closed');
  }

  private async checkRefund(row: ProviderRefundRow): Promise<void> {
    const { store, service, clock } = this.d;
    const found = service.gatewayOf(row.provider);
    const channel = found ? await service.channelOf(found.provider, row.game_id) : undefined;
    if (!found || !channel) throw new Error(`the game has no ${row.provider} channel to ask about refund ${row.refund_id}`);
    const state = await found.gateway.queryRefund(channel, refundRequest(row));
    if (state.state !== 'pending') {
      await service.settleRefund(row, state);
      return;
    }
    const now = clock.now();
    await store.updateRefund(store.db, row.refund_id, { checks: row.checks + 1, next_check_at: now + checkDelay(row.checks + 1), locked_until: 0, locked_by: null, updated_at: now, provider_refund_id: state.provider_refund_id ?? row.provider_refund_id });
  }

  private async retryPayment(row: ProviderPaymentRow, err: unknown): Promise<void> {
    const { store, clock } = this.d;
    this.d.logger.warn({ err, order_id: row.order_id, provider: row.provider }, 'provider payment query failed; tried again later');
    const now = clock.now();
    await store.updatePayment(store.db, row.provider, row.order_id, { checks: row.checks + 1, next_check_at: now + checkDelay(row.checks + 1), locked_until: 0, locked_by: null, updated_at: now }).catch(() => undefined);
  }

  private async retryRefund(row: ProviderRefundRow, err: unknown): Promise<void> {
    const { store, clock } = this.d;
    this.d.logger.warn({ err, refund_id: row.refund_id, provider: row.provider }, 'provider refund query failed; tried again later');
    const now = clock.now();
    await store.updateRefund(store.db, row.refund_id, { checks: row.checks + 1, next_check_at: now + checkDelay(row.checks + 1), locked_until: 0, locked_by: null, updated_at: now }).catch(() => undefined);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.runOnce()
        .catch((err: unknown) => this.d.logger.error({ err }, 'provider payment checks failed'))
        .finally(() => {
          this.running = null;
          this.schedule();
        });
    }, this.d.intervalMs);
    this.timer.unref();
  }
}
