import { recordAudit, type Actor } from '../../admin/audit.js';
import { Errors } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import { prefixedId, type IdGenerator } from '../../lib/ids.js';
import type { OrderLifecycle } from '../../orders/lifecycle.js';
import type { OrderRow, OrderStore } from '../../orders/store.js';
import type { ChannelService } from '../channel-service.js';
import type { GameChannel, PaymentProvider, ProviderGateway, RefundRequest, RefundState, VerifiedPayment } from '../provider.js';
import type { PaymentOutcome, PaymentService } from '../service.js';
import { checkDelay, type ProviderPaymentStore, type ProviderRefundRow } from './store.js';

export interface ProviderPaymentsDeps {
  store: ProviderPaymentStore;
  payments: PaymentService;
  channels: ChannelService;
  orders: OrderStore;
  lifecycle: OrderLifecycle;
  clock: Clock;
  ids: IdGenerator;
  /** Called after a refund (and its notification) committed, e.g. to wake the notifier. */
  onRefunded?: (orderId: string) => void;
}

/** A refund the provider reports through its callback (or a query), ours or started in its merchant portal. */
export interface ReportedRefund {
  /** Our out_refund_no as the provider echoes it (a portal refund has one of the provider's making). */
  refund_id: string | null;
  provider_refund_id: string | null;
  provider_txn_id: string | null;
  order_id: string | null;
  state: RefundState['state'];
  /** What was refunded, and of which payment total (minor units); null when not said. */
  amount: number | null;
  total: number | null;
  message?: string;
}

/**
 * The shared part of channels whose payments stay open at the provider (WeChat Pay, Alipay;
 * payments.md 4-5): a payment the provider confirms (callback or query) is applied here, the
 * same way whichever path saw it first; operator refunds are requested from the provider and
 * settled by its callback or a query; refunds started in the merchant portal refund the order.
 */
export class ProviderPayments {
  constructor(private readonly d: ProviderPaymentsDeps) {}

  /** Applies a payment the provider confirmed; the open payment is settled. Safe to repeat. */
  async applyPaid(providerName: string, paid: VerifiedPayment): Promise<PaymentOutcome> {
    const outcome = await this.d.payments.apply(providerName, paid);
    const { store, clock } = this.d;
    await store.updatePayment(store.db, providerName, paid.order_id, { state: 'paid', updated_at: clock.now(), locked_until: 0, locked_by: null });
    return outcome;
  }

  /** An order's open payments are checked by the next run of the job (e.g. it was canceled: close them). */
  checkSoon(orderId: string): Promise<void> {
    return this.d.store.checkSoon(orderId, this.d.clock.now());
  }

  /**
   * An operator's refund of an order paid through a provider with a gateway: refund_pending,
   * the refund requested, then settled at once when the provider answers with a final state
   * (else by its callback or the job's query). Null when the order was not paid through such a
   * provider (the caller refunds it its own way). 409 when the order cannot be refunded now.
   */
  async requestRefund(orderId: string, by: Actor, reason: string | undefined): Promise<OrderRow | null> {
    const { store, payments, orders, lifecycle, clock, ids } = this.d;
    const paid = await payments.acceptedPayment(orderId);
    const provider = paid ? payments.provider(paid.provider) : undefined;
    if (!paid || !provider?.gateway) return null;
    const now = clock.now();
    const refundId = prefixedId('rfd', ids);
    const row = await store.transaction(async (trx) => {
      const r = await lifecycle.requestRefund(trx, orderId, now, { actor: by.actor, reason, refund_id: refundId });
      if (!r.order) throw Errors.notFound(`order ${orderId} not found`);
      if (!r.changed) throw Errors.invalidState(`order ${orderId} is ${r.order.status}; refund is not allowed`);
      const refund: ProviderRefundRow = {
        refund_id: refundId,
        provider: provider.name,
        order_id: orderId,
        game_id: r.order.game_id,
        provider_txn_id: paid.provider_txn_id,
        amount: paid.amount,
        currency: paid.currency,
        status: 'pending',
        provider_refund_id: null,
        actor: by.actor,
        reason: reason ?? null,
        detail: null,
        checks: 0,
        next_check_at: now + checkDelay(0),
        locked_until: 0,
        locked_by: null,
        created_at: now,
        updated_at: now,
      };
      await store.insertRefund(trx, refund);
      await recordAudit(trx, ids, now, { by, game: r.order.game_id, action: 'order.refund', target: orderId, detail: { from: r.from, to: r.order.status, reason, refund_id: refundId } });
      return refund;
    });
    const channel = await this.channelOf(provider, row.game_id);
    let state: RefundState | null = null;
    try {
      state = channel ? await provider.gateway.requestRefund(channel, refundRequest(row)) : { state: 'failed', message: `the game has no ${provider.name} channel any more` };
    } catch {
      // No answer that says anything: the job asks the provider about this refund later.
      state = null;
    }
    if (state && state.state !== 'pending') await this.settleRefund(row, state);
    else if (state?.provider_refund_id) await store.updateRefund(store.db, refundId, { provider_refund_id: state.provider_refund_id, updated_at: clock.now() });
    return (await orders.findById(orders.db, orderId)) as OrderRow;
  }

  /**
   * A refund the provider reports: ours (refund_id known) is settled; one made in the merchant
   * portal refunds the order when it returns the whole payment (a partial one is only
   * reported: orders are refunded whole). Returns what it did, for the callback's log line.
   */
  async reportRefund(providerName: string, r: ReportedRefund): Promise<{ order_id: string | null; settled: string }> {
    const { store } = this.d;
    const ours = r.refund_id ? await store.findRefund(store.db, r.refund_id) : undefined;
    if (ours && ours.provider === providerName) {
      const state: RefundState = r.state === 'failed' ? { state: 'failed', message: r.message ?? 'the provider did not complete the refund' } : { state: r.state };
      if (r.provider_refund_id) state.provider_refund_id = r.provider_refund_id;
      if (state.state === 'pending') return { order_id: ours.order_id, settled: 'pending' };
      return { order_id: ours.order_id, settled: (await this.settleRefund(ours, state)) ? state.state : 'already' };
    }
    if (r.state !== 'succeeded' || !r.provider_txn_id) return { order_id: r.order_id, settled: `ignored (${r.state})` };
    if (r.amount !== null && r.total !== null && r.amount < r.total) return { order_id: r.order_id, settled: 'ignored (partial refund)' };
    const reversed = await this.d.payments.reverse(providerName, r.provider_txn_id, `refund made in the ${providerName} merchant portal${r.provider_refund_id ? ` (${r.provider_refund_id})` : ''}`);
    return { order_id: reversed?.order_id ?? null, settled: reversed?.refunded ? 'succeeded' : 'already' };
  }

  /** Settles one of our refunds: refunded (and the game's refund notification) or refund_failed. */
  async settleRefund(refund: ProviderRefundRow, state: Exclude<RefundState, { state: 'pending' }>): Promise<boolean> {
    const { store, lifecycle, clock } = this.d;
    const now = clock.now();
    const changed = await store.transaction(async (trx) => {
      const detail = state.state === 'failed' ? JSON.stringify({ message: state.message }) : null;
      // A refund the provider gave up on may still succeed later (WeChat Pay's ABNORMAL, settled
      // by the merchant): the money is back, so the order is refunded after all.
      const from: ProviderRefundRow['status'][] = state.state === 'succeeded' ? ['pending', 'failed'] : ['pending'];
      const won = await store.settleRefund(trx, refund.refund_id, from, { status: state.state, provider_refund_id: state.provider_refund_id ?? refund.provider_refund_id, detail, updated_at: now, locked_until: 0, locked_by: null });
      if (!won) return false;
      if (state.state === 'succeeded') {
        await lifecycle.refundConfirmed(trx, refund.order_id, now, { actor: refund.actor, reason: refund.reason ?? undefined });
      } else {
        await lifecycle.refundFailed(trx, refund.order_id, now, { refund_id: refund.refund_id, message: state.message });
      }
      return true;
    });
    if (changed && state.state === 'succeeded') this.d.onRefunded?.(refund.order_id);
    return changed;
  }

  async channelOf(provider: PaymentProvider, gameId: string): Promise<GameChannel | undefined> {
    return (await this.d.channels.forGame(gameId)).get(provider.name);
  }

  gatewayOf(providerName: string): { provider: PaymentProvider; gateway: ProviderGateway } | undefined {
    const provider = this.d.payments.provider(providerName);
    return provider?.gateway ? { provider, gateway: provider.gateway } : undefined;
  }
}

export function refundRequest(r: ProviderRefundRow): RefundRequest {
  return { refund_id: r.refund_id, order_id: r.order_id, provider_txn_id: r.provider_txn_id, amount: r.amount, currency: r.currency, reason: r.reason };
}
