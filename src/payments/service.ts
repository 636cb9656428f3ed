import type { DomainMetrics } from '../observability/metrics.js';
import type { Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { Errors } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import type { OrderLifecycle } from '../orders/lifecycle.js';
import { isUniqueViolation, type OrderRow, type OrderStore } from '../orders/store.js';
import type { PayableOrder, PayingGame, PaymentProvider, VerifiedPayment } from './provider.js';
import type { PaymentRow, PaymentStore } from './store.js';

export interface PaymentServiceDeps {
  payments: PaymentStore;
  /** Read access to orders; state changes go through `lifecycle` only. */
  orders: OrderStore;
  lifecycle: OrderLifecycle;
  providers: PaymentProvider[];
  clock: Clock;
  ids: IdGenerator;
  /** Called after a payment that made an order `paid` has committed (e.g. wake the notifier). */
  onPaid?: (orderId: string) => void;
  /** Counts applied payments per game for /metrics (src/observability). */
  metrics?: Pick<DomainMetrics, 'payment'>;
}

/** Why a payment was flagged instead of accepted; the operator settles it (usually a refund). */
export type FlagReason = 'amount_mismatch' | 'unknown_order' | `order_${string}`;

export interface PaymentOutcome {
  payment_id: string;
  order_id: string;
  status: 'accepted' | 'flagged';
  /** True when this provider transaction had been processed before (idempotent replay). */
  replay: boolean;
  reason?: FlagReason;
}

export type PayResult = { kind: 'confirmed'; outcome: PaymentOutcome } | { kind: 'pending'; redirect_url: string };

/**
 * Payments (PROTOCOL 6, 10): starts payments through a channel's provider and turns verified
 * confirmations into paid orders. A confirmation is processed once per (provider,
 * provider_txn_id); one whose amount or currency differs from the order is stored `flagged` and
 * leaves the order unchanged. The payment row, the order change and its ship_order
 * notification commit together.
 */
export class PaymentService {
  private readonly providers: Map<string, PaymentProvider>;

  constructor(private readonly d: PaymentServiceDeps) {
    this.providers = new Map(d.providers.map((p) => [p.name, p]));
  }

  /** Pays an order through `channel`; 403 channel_unavailable when the game does not offer it. */
  async pay(order: PayableOrder, game: PayingGame, channel: string): Promise<PayResult> {
    const provider = this.providers.get(channel);
    if (!provider || !provider.available(game)) throw Errors.channelUnavailable(`payment channel ${channel} is not available for this game`);
    const started = await provider.start(order);
    if (started.kind === 'pending') return started;
    return { kind: 'confirmed', outcome: await this.confirm(channel, started.confirmation) };
  }

  /** Verifies a provider's confirmation and applies it; safe to call again with the same one. */
  async confirm(providerName: string, confirmation: unknown): Promise<PaymentOutcome> {
    const provider = this.providers.get(providerName);
    if (!provider) throw Errors.invalidRequest(`unknown payment provider ${providerName}`);
    const paid = await provider.verify(confirmation);
    let outcome: PaymentOutcome;
    // The game of the order paid for, once apply has found it (for the per-game payment count).
    let gameId: string | undefined;
    try {
      outcome = await this.d.payments.transaction((trx) => this.apply(trx, provider, paid, (g) => (gameId = g)));
    } catch (e) {
      // A concurrent confirmation of the same provider transaction committed first.
      if (!isUniqueViolation(e)) throw e;
      const winner = await this.d.payments.findByTxn(this.d.payments.db, provider.name, paid.provider_txn_id);
      if (!winner) throw e;
      return toOutcome(winner, true);
    }
    if (!outcome.replay && gameId !== undefined) this.d.metrics?.payment(gameId, outcome.status);
    if (outcome.status === 'accepted' && !outcome.replay) this.d.onPaid?.(outcome.order_id);
    return outcome;
  }

  private async apply(trx: Transaction<DB>, provider: PaymentProvider, paid: VerifiedPayment, gameOf: (gameId: string) => void): Promise<PaymentOutcome> {
    const { payments, orders, lifecycle, clock, ids } = this.d;
    const before = await payments.findByTxn(trx, provider.name, paid.provider_txn_id);
    if (before) return toOutcome(before, true);

    const now = clock.now();
    const row: PaymentRow = {
      payment_id: prefixedId('pay', ids),
      order_id: paid.order_id,
      provider: provider.name,
      provider_txn_id: paid.provider_txn_id,
      amount: paid.amount,
      currency: paid.currency,
      status: 'flagged',
      late: 0,
      detail: null,
      created_at: now,
    };
    const order = await orders.findById(trx, paid.order_id);
    if (order) gameOf(order.game_id);
    const mismatch = order ? mismatchReason(order, paid) : 'unknown_order';
    if (mismatch) return this.flag(trx, row, mismatch, order);

    const r = await lifecycle.markPaid(trx, paid.order_id, now, { paymentId: row.payment_id, provider: provider.name, sandbox: provider.sandbox });
    // Not payable (already paid through another transaction, or canceled): money moved that
    // the order does not need; keep it for the operator to refund.
    if (!r.changed) return this.flag(trx, row, `order_${r.order?.status ?? 'missing'}`, r.order);
    await payments.insert(trx, { ...row, status: 'accepted', late: r.order.late_payment });
    return toOutcome({ ...row, status: 'accepted' }, false);
  }

  private async flag(trx: Transaction<DB>, row: PaymentRow, reason: FlagReason, order: OrderRow | undefined): Promise<PaymentOutcome> {
    const expected = order ? { amount: order.amount, currency: order.currency, status: order.status } : null;
    const flagged: PaymentRow = { ...row, status: 'flagged', detail: JSON.stringify({ reason, expected }) };
    await this.d.payments.insert(trx, flagged);
    return toOutcome(flagged, false);
  }
}

function mismatchReason(order: OrderRow, paid: VerifiedPayment): FlagReason | null {
  return order.amount !== paid.amount || order.currency !== paid.currency ? 'amount_mismatch' : null;
}

function toOutcome(p: PaymentRow, replay: boolean): PaymentOutcome {
  const reason = p.status === 'flagged' && p.detail ? (JSON.parse(p.detail) as { reason?: FlagReason }).reason : undefined;
  return { payment_id: p.payment_id, order_id: p.order_id, status: p.status, replay, ...(reason ? { reason } : {}) };
}
