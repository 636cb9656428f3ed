import type { Transaction, Updateable } from 'kysely';
import type { DB, OrderStatus, OrdersTable } from '../db/schema.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import { enqueueNotification } from '../notifications/outbox.js';
import type { OrderRow, OrderStore } from './store.js';

/**
 * The order state machine (PROTOCOL 6):
 *
 *   created -> paid -> delivered       payment accepted; ship_order acknowledged
 *   created -> expired                 no payment by expires_at (sweeper)
 *   expired -> paid                    a payment confirmed after expiry (late_payment = 1)
 *   created -> canceled                operator
 *   paid | delivered -> refunded       operator (sandbox) or the provider's reversal; queues a
 *                                      `refund` notification
 *   paid | delivered | refund_failed -> refund_pending
 *                                      operator refund requested from the provider (payments.md 5)
 *   refund_pending -> refunded         the provider confirms the money is back; `refund` notification
 *   refund_pending -> refund_failed    the provider refuses; the operator may request it again
 *
 * (`paid -> delivered` is the notification dispatcher's, with the same guarded-update rule.)
 *
 * Every change is a guarded update (WHERE status = the status just read) inside the caller's
 * transaction, recorded in order_events; the notification it causes is written in the same
 * transaction (outbox).
 */
export type TransitionResult =
  | { changed: true; from: OrderStatus; order: OrderRow }
  | { changed: false; order: OrderRow | undefined };

const PAYABLE: OrderStatus[] = ['created', 'expired'];
const REFUNDABLE: OrderStatus[] = ['paid', 'delivered'];
/** A refund the provider confirms (or starts itself) settles these too. */
const PROVIDER_REFUNDABLE: OrderStatus[] = ['paid', 'delivered', 'refund_pending', 'refund_failed'];
const REFUND_REQUESTABLE: OrderStatus[] = ['paid', 'delivered', 'refund_failed'];
/** Concurrent writers that keep moving the order between allowed states; never in practice. */
const MAX_RACES = 5;

export interface PaidBy {
  paymentId: string;
  provider: string;
  sandbox: boolean;
}

/** Who changed an order by hand, and why (kept in the event's detail). */
export interface OperatorAction {
  actor: string;
  reason?: string;
}

export class OrderLifecycle {
  constructor(private readonly d: { store: OrderStore; ids: IdGenerator }) {}

  /** created|expired -> paid, and the ship_order notification. Late when past expires_at. */
  async markPaid(trx: Transaction<DB>, orderId: string, now: number, by: PaidBy): Promise<TransitionResult> {
    const r = await this.transition(trx, orderId, PAYABLE, 'paid', now, (cur) => {
      const late = cur.status === 'expired' || now >= cur.expires_at;
      return {
        patch: { paid_at: now, is_sandbox: by.sandbox ? 1 : 0, late_payment: late ? 1 : 0 },
        detail: { payment_id: by.paymentId, provider: by.provider, ...(late ? { late: true } : {}) },
      };
    });
    if (r.changed) await enqueueNotification(trx, this.d.ids, r.order, 'ship_order', now);
    return r;
  }

  /** created -> expired, only once expires_at has passed. */
  expire(trx: Transaction<DB>, orderId: string, now: number): Promise<TransitionResult> {
    return this.transition(trx, orderId, ['created'], 'expired', now, (cur) =>
      now >= cur.expires_at ? { patch: { expired_at: now }, detail: null } : null,
    );
  }

  /** created -> canceled (operator). */
  cancel(trx: Transaction<DB>, orderId: string, now: number, by: OperatorAction): Promise<TransitionResult> {
    return this.transition(trx, orderId, ['created'], 'canceled', now, () => ({ patch: { canceled_at: now }, detail: { ...by } }));
  }

  /** paid|delivered -> refunded (operator), and the refund notification. */
  async refund(trx: Transaction<DB>, orderId: string, now: number, by: OperatorAction): Promise<TransitionResult> {
    const r = await this.transition(trx, orderId, REFUNDABLE, 'refunded', now, () => ({ patch: { refunded_at: now }, detail: { ...by } }));
    if (r.changed) await enqueueNotification(trx, this.d.ids, r.order, 'refund', now);
    return r;
  }

  /**
   * paid|delivered|refund_pending|refund_failed -> refunded once the provider says the money is
   * back (its confirmation of our request, or a reversal it started), and the refund notification.
   */
  async refundConfirmed(trx: Transaction<DB>, orderId: string, now: number, by: OperatorAction): Promise<TransitionResult> {
    const r = await this.transition(trx, orderId, PROVIDER_REFUNDABLE, 'refunded', now, () => ({ patch: { refunded_at: now }, detail: { ...by } }));
    if (r.changed) await enqueueNotification(trx, this.d.ids, r.order, 'refund', now);
    return r;
  }

  /** paid|delivered|refund_failed -> refund_pending: the refund is requested from the provider. */
  requestRefund(trx: Transaction<DB>, orderId: string, now: number, by: OperatorAction & { refund_id: string }): Promise<TransitionResult> {
    return this.transition(trx, orderId, REFUND_REQUESTABLE, 'refund_pending', now, () => ({ patch: {}, detail: { ...by } }));
  }

  /** refund_pending -> refund_failed: the provider refused the refund (visible; may be requested again). */
  refundFailed(trx: Transaction<DB>, orderId: string, now: number, detail: { refund_id: string; message: string }): Promise<TransitionResult> {
    return this.transition(trx, orderId, ['refund_pending'], 'refund_failed', now, () => ({ patch: {}, detail }));
  }

  /**
   * Reads the order, and when its status is allowed (and `plan` agrees) updates it guarded on
   * that very status. If a concurrent writer changed it in between, the update touches no row
   * and the order is read again: no lost update, on SQLite or PostgreSQL, without row locks.
   */
  private async transition(
    trx: Transaction<DB>,
    orderId: string,
    allowed: OrderStatus[],
    to: OrderStatus,
    now: number,
    plan: (cur: OrderRow) => { patch: Updateable<OrdersTable>; detail: unknown } | null,
  ): Promise<TransitionResult> {
    const { store, ids } = this.d;
    for (let i = 0; i < MAX_RACES; i++) {
      const cur = await store.findById(trx, orderId);
      if (!cur || !allowed.includes(cur.status)) return { changed: false, order: cur };
      const step = plan(cur);
      if (!step) return { changed: false, order: cur };
      const order = await store.updateIfStatus(trx, orderId, cur.status, { ...step.patch, status: to, updated_at: now });
      if (!order) continue;
      await store.insertEvent(trx, {
        event_id: prefixedId('oev', ids),
        order_id: orderId,
        from_status: cur.status,
        to_status: to,
        at: now,
        detail: step.detail === null ? null : JSON.stringify(step.detail),
      });
      return { changed: true, from: cur.status, order };
    }
    throw new Error(`order ${orderId} kept changing state; transition to ${to} abandoned`);
  }
}
