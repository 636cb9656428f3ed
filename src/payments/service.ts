import type { Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import type { DomainMetrics } from '../observability/metrics.js';
import { Errors } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import type { OrderLifecycle } from '../orders/lifecycle.js';
import { isUniqueViolation, type OrderRow, type OrderStore } from '../orders/store.js';
import type { GameChannel, PayableOrder, PaymentAction, PaymentProvider, PayOptions, VerifiedPayment } from './provider.js';
import { checkDelay, type ProviderPaymentStore } from './provider-payments/store.js';
import type { PaymentRow, PaymentStore } from './store.js';

export interface PaymentServiceDeps {
  payments: PaymentStore;
  /** Read access to orders; state changes go through `lifecycle` only. */
  orders: OrderStore;
  lifecycle: OrderLifecycle;
  providers: PaymentProvider[];
  /** Payments held open at a provider (channels with a gateway): their actions are kept here. */
  open?: ProviderPaymentStore;
  clock: Clock;
  ids: IdGenerator;
  /** Called after a payment that made an order `paid` has committed (e.g. wake the notifier). */
  onPaid?: (orderId: string) => void;
  /** Called after a provider's reversal refunded an order (e.g. wake the notifier). */
  onRefunded?: (orderId: string) => void;
  /** Counts applied payments per game for /metrics (src/observability). */
  metrics?: Pick<DomainMetrics, 'payment'>;
}

/** Why a payment was flagged instead of accepted; the operator settles it (usually a refund). */
export type FlagReason =
  | 'amount_mismatch'
  | 'product_mismatch'
  | 'quantity_mismatch'
  | 'transaction_used'
  | 'unknown_order'
  | `order_${string}`;

const FLAG_MESSAGES: Record<string, string> = {
  amount_mismatch: 'the amount or currency paid differs from the order',
  product_mismatch: "the purchased product is not the order's product",
  quantity_mismatch: "the purchased quantity differs from the order's",
  transaction_used: 'this transaction already paid another order',
  unknown_order: 'the payment names no known order',
};

export interface PaymentOutcome {
  payment_id: string;
  order_id: string;
  status: 'accepted' | 'flagged';
  /** True when this provider transaction had been processed before (idempotent replay). */
  replay: boolean;
  reason?: FlagReason;
  /** The game of the order paid for, when the payment names a known order. */
  game_id?: string;
}

/** `order`: the order as this payment left it, when the payment made it paid (not read again). */
export type PayResult = { kind: 'confirmed'; outcome: PaymentOutcome; order?: OrderRow } | { kind: 'pending'; action: PaymentAction };

interface Applied {
  outcome: PaymentOutcome;
  order?: OrderRow;
}

/**
 * Payments (PROTOCOL 6, 10; payments.md 1): starts payments through a channel's provider and
 * turns verified payments into paid orders, under the rules of every channel:
 * - a provider transaction is processed once per order: the same one again answers the same
 *   outcome; one that claims a second order is kept `flagged` (transaction_used) and pays
 *   nothing (a provider transaction pays at most one order, ever);
 * - web channels must pay the order's amount and currency; app stores must sell the order's
 *   product (its store id) and quantity, and their price is recorded as the store charged it;
 * - otherwise the payment is stored `flagged` and the order is left unchanged.
 * The payment row, the order change and its ship_order notification commit together.
 */
export class PaymentService {
  private readonly providers: Map<string, PaymentProvider>;

  constructor(private readonly d: PaymentServiceDeps) {
    this.providers = new Map(d.providers.map((p) => [p.name, p]));
  }

  provider(name: string): PaymentProvider | undefined {
    return this.providers.get(name);
  }

  get providerNames(): string[] {
    return [...this.providers.keys()];
  }

  /**
   * Pays an order through `channel`; 403 channel_unavailable unless the game has it enabled.
   * A channel whose payments stay open at the provider answers the action it handed out for
   * this mode again while that payment is open (the provider would refuse a second one).
   */
  async pay(order: PayableOrder, channels: ReadonlyMap<string, GameChannel>, channel: string, opts: PayOptions = { mode: undefined, client_ip: '' }): Promise<PayResult> {
    const provider = this.providers.get(channel);
    const settings = channels.get(channel);
    if (!provider || !settings?.enabled) throw Errors.channelUnavailable(`payment channel ${channel} is not available for this game`);
    const mode = modeOf(provider, opts.mode);
    const { open, clock } = this.d;
    if (provider.gateway && mode && open) {
      const known = await open.find(open.db, provider.name, order.order_id);
      const action = known?.state === 'open' ? (JSON.parse(known.actions) as Record<string, PaymentAction>)[mode] : undefined;
      if (action) return { kind: 'pending', action };
    }
    const started = await provider.start(order, settings, { ...opts, mode });
    if (started.kind === 'pending') {
      if (provider.gateway && mode && open) {
        const now = clock.now();
        await open.recordAction(provider.name, order, mode, started.action, now, now + checkDelay(0));
      }
      return started;
    }
    // A payment started here is new to this call: no replay read before its transaction (the
    // transaction itself still answers a replay from the stored row).
    if (!provider.verify) throw Errors.invalidRequest(`unknown payment provider ${channel}`);
    const applied = await this.applyVerified(provider, await provider.verify(started.confirmation));
    return { kind: 'confirmed', outcome: applied.outcome, ...(applied.order ? { order: applied.order } : {}) };
  }

  /** The accepted payment of a provider transaction. */
  findAcceptedTxn(providerName: string, txnId: string): Promise<PaymentRow | undefined> {
    return this.d.payments.findAccepted(this.d.payments.db, providerName, txnId);
  }

  /** Accepted payments of a channel and game recorded in [from, to) (Unix ms). */
  acceptedBetween(providerName: string, gameId: string, from: number, to: number): Promise<PaymentRow[]> {
    return this.d.payments.db
      .selectFrom('payments')
      .selectAll()
      .where('provider', '=', providerName)
      .where('game_id', '=', gameId)
      .where('status', '=', 'accepted')
      .where('created_at', '>=', from)
      .where('created_at', '<', to)
      .execute();
  }

  /** The payment that paid an order (its provider, transaction and amount). */
  acceptedPayment(orderId: string): Promise<PaymentRow | undefined> {
    return this.d.payments.acceptedOf(this.d.payments.db, orderId);
  }

  /** Verifies a provider's confirmation and applies it; safe to call again with the same one. */
  async confirm(providerName: string, confirmation: unknown): Promise<PaymentOutcome> {
    const provider = this.providers.get(providerName);
    if (!provider?.verify) throw Errors.invalidRequest(`unknown payment provider ${providerName}`);
    return this.apply(providerName, await provider.verify(confirmation));
  }

  /** Applies a payment the channel has verified itself; safe to call again with the same one. */
  async apply(providerName: string, paid: VerifiedPayment): Promise<PaymentOutcome> {
    const provider = this.providers.get(providerName);
    if (!provider) throw Errors.invalidRequest(`unknown payment provider ${providerName}`);
    // A replay (a client submitting its transaction again) is answered from the stored row,
    // which never changes, without a write transaction.
    const { payments } = this.d;
    const stored = (await payments.findByTxn(payments.db, provider.name, paid.provider_txn_id)).find((p) => p.order_id === paid.order_id);
    if (stored) return toOutcome(stored, true);
    return (await this.applyVerified(provider, paid)).outcome;
  }

  private async applyVerified(provider: PaymentProvider, paid: VerifiedPayment): Promise<Applied> {
    let applied: Applied;
    try {
      applied = await this.d.payments.transaction((trx) => this.applyIn(trx, provider, paid));
    } catch (e) {
      // A concurrent payment of the same provider transaction committed first: read again, it
      // is now a replay (same order) or a transaction already used (another order).
      if (!isUniqueViolation(e)) throw e;
      applied = await this.d.payments.transaction((trx) => this.applyIn(trx, provider, paid));
    }
    const { outcome } = applied;
    if (!outcome.replay && outcome.game_id) this.d.metrics?.payment(outcome.game_id, outcome.status);
    if (outcome.status === 'accepted' && !outcome.replay) this.d.onPaid?.(outcome.order_id);
    return applied;
  }

  /**
   * A reversal the provider started (an App Store refund or revocation, a voided Play
   * purchase, a refund made in a merchant portal): refunds the order the transaction paid and
   * queues the game's `refund` notification, which is sent after the order's ship_order.
   * Null when the transaction paid no order; `refunded: false` when the order was not
   * refundable (refunded already: safe to repeat).
   */
  async reverse(providerName: string, providerTxnId: string, reason: string): Promise<{ order_id: string; refunded: boolean } | null> {
    const { payments, lifecycle, clock } = this.d;
    const now = clock.now();
    const r = await payments.transaction(async (trx) => {
      const paid = await payments.findAccepted(trx, providerName, providerTxnId);
      if (!paid) return null;
      const t = await lifecycle.refundConfirmed(trx, paid.order_id, now, { actor: `provider:${providerName}`, reason });
      return { order_id: paid.order_id, refunded: t.changed };
    });
    if (r?.refunded) this.d.onRefunded?.(r.order_id);
    return r;
  }

  /** Refuses (409) an operator refund of an order paid through a channel only its provider refunds. */
  async checkOperatorRefund(orderId: string): Promise<void> {
    const { payments } = this.d;
    const paid = await payments.acceptedOf(payments.db, orderId);
    const refusal = paid ? this.providers.get(paid.provider)?.refundedByProvider : undefined;
    if (refusal) throw Errors.invalidState(refusal);
  }

  /**
   * Before an operator's refund (payments.md 5): an order paid through a channel that returns
   * money itself has the provider refund it first; throws, changing nothing, when the provider
   * refuses or cannot be reached. Orders not refundable are left to the refund's own 409.
   */
  async refundAtProvider(order: OrderRow, channels: (gameId: string) => Promise<ReadonlyMap<string, GameChannel>>): Promise<void> {
    if (order.status !== 'paid' && order.status !== 'delivered') return;
    const paid = await this.d.payments.acceptedOf(this.d.payments.db, order.order_id);
    const provider = paid ? this.providers.get(paid.provider) : undefined;
    if (!paid || !provider?.refund) return;
    const channel = (await channels(order.game_id)).get(provider.name);
    if (!channel) throw Errors.invalidState(`order ${order.order_id} was paid through ${provider.name}, which its game no longer has set up: refund it in the provider's console`);
    await provider.refund(paid, channel);
  }

  private async applyIn(trx: Transaction<DB>, provider: PaymentProvider, paid: VerifiedPayment): Promise<Applied> {
    const { payments, orders, lifecycle, clock, ids } = this.d;
    const before = await payments.findByTxn(trx, provider.name, paid.provider_txn_id);
    const mine = before.find((p) => p.order_id === paid.order_id);
    if (mine) return { outcome: toOutcome(mine, true) };

    const order = await orders.findById(trx, paid.order_id);
    const now = clock.now();
    const row: PaymentRow = {
      payment_id: prefixedId('pay', ids),
      order_id: paid.order_id,
      game_id: order?.game_id ?? null,
      provider: provider.name,
      provider_txn_id: paid.provider_txn_id,
      amount: paid.amount ?? order?.amount ?? 0,
      currency: paid.currency ?? order?.currency ?? '',
      status: 'flagged',
      late: 0,
      detail: null,
      created_at: now,
      environment: paid.environment ?? null,
      store_amount: paid.store?.price?.amount ?? null,
      store_currency: paid.store?.price?.currency ?? null,
      reason: null,
    };
    if (before.length > 0) return { outcome: await this.flag(trx, row, 'transaction_used', order, { paid_order_id: before[0]!.order_id }) };
    if (!order) return { outcome: await this.flag(trx, row, 'unknown_order', order) };
    const mismatch = await this.mismatchReason(trx, provider, order, paid);
    if (mismatch) return { outcome: await this.flag(trx, row, mismatch, order) };

    const sandbox = paid.sandbox ?? provider.sandbox;
    const r = await lifecycle.markPaid(trx, paid.order_id, now, { paymentId: row.payment_id, provider: provider.name, sandbox }, order);
    // Not payable (already paid through another transaction, or canceled): money moved that
    // the order does not need; keep it for the operator to refund.
    if (!r.changed) return { outcome: await this.flag(trx, row, `order_${r.order?.status ?? 'missing'}`, r.order) };
    await payments.insert(trx, { ...row, status: 'accepted', late: r.order.late_payment });
    return { outcome: toOutcome({ ...row, status: 'accepted' }, false), order: r.order };
  }

  private async mismatchReason(trx: Transaction<DB>, provider: PaymentProvider, order: OrderRow, paid: VerifiedPayment): Promise<FlagReason | null> {
    if (!paid.store) return order.amount !== paid.amount || order.currency !== paid.currency ? 'amount_mismatch' : null;
    const storeIds = await this.d.payments.storeProductIds(trx, order.game_id, order.product_id);
    if (storeIds?.[provider.name] !== paid.store.product_id) return 'product_mismatch';
    return paid.store.quantity === order.quantity ? null : 'quantity_mismatch';
  }

  private async flag(trx: Transaction<DB>, row: PaymentRow, reason: FlagReason, order: OrderRow | undefined, extra: object = {}): Promise<PaymentOutcome> {
    const expected = order ? { amount: order.amount, currency: order.currency, status: order.status, product_id: order.product_id, quantity: order.quantity } : null;
    const flagged: PaymentRow = { ...row, status: 'flagged', reason, detail: JSON.stringify({ reason, expected, ...extra }) };
    await this.d.payments.insert(trx, flagged);
    return toOutcome(flagged, false);
  }
}

/** What a flagged payment means to the client that submitted it: 409 for the order's state, else 422. */
export function refusalOf(outcome: PaymentOutcome): Error {
  const reason = outcome.reason ?? 'unknown_order';
  if (reason.startsWith('order_')) return Errors.invalidState(`order ${outcome.order_id} is ${reason.slice(6)} and cannot be paid; the payment is kept for the operator`);
  return Errors.paymentRejected(`payment rejected: ${FLAG_MESSAGES[reason] ?? reason}; the payment is kept for the operator`);
}

/** The mode asked for, or the channel's default; 400 for a mode the channel does not have. */
function modeOf(provider: PaymentProvider, mode: string | undefined): string | undefined {
  const modes = provider.modes ?? [];
  if (mode === undefined) return modes[0];
  if (!modes.includes(mode)) {
    throw Errors.invalidRequest(modes.length ? `mode ${mode} is not one of channel ${provider.name}'s: ${modes.join(', ')}` : `channel ${provider.name} takes no mode`);
  }
  return mode;
}

function toOutcome(p: PaymentRow, replay: boolean): PaymentOutcome {
  const reason = p.status === 'flagged' ? ((p.reason ?? (p.detail ? (JSON.parse(p.detail) as { reason?: string }).reason : undefined)) as FlagReason | undefined) : undefined;
  return { payment_id: p.payment_id, order_id: p.order_id, status: p.status, replay, ...(reason ? { reason } : {}), ...(p.game_id ? { game_id: p.game_id } : {}) };
}
