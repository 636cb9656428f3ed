import type { Transaction } from 'kysely';
import type { Selectable } from 'kysely';
import type { DB, PaymentsTable } from '../db/schema.js';
import { recordAudit, type Actor } from '../admin/audit.js';
import { Errors } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import type { OrderAdminStore, OrderCursor } from './admin-store.js';
import type { AdminOrder, AdminOrderDetail, AdminPayment, ListOrdersQuery, OrderPage } from './admin-schemas.js';
import type { OperatorAction, OrderLifecycle, TransitionResult } from './lifecycle.js';
import type { OrderEventRow, OrderRow, OrderStore } from './store.js';
import { formatOrderToken } from './token.js';
import { withoutPassword } from '../lib/url-display.js';

export interface OrderAdminDeps {
  store: OrderStore;
  views: OrderAdminStore;
  lifecycle: OrderLifecycle;
  clock: Clock;
  ids: IdGenerator;
  /** PUBLIC_BASE_URL: the checkout links in order details point there. */
  publicBaseUrl: string;
  /** Called after a refund (and its notification) committed, e.g. to wake the notifier. */
  onRefunded?: (orderId: string) => void;
  /** Refuses (throws) a refund the payment's provider must make itself (payments.md 5). */
  checkRefund?: (orderId: string) => Promise<void>;
  /**
   * Requests the refund from the provider that took the money (payments.md 5): the order as it
   * is after (refund_pending, refunded or refund_failed), or null when its channel moves no
   * money back this way (sandbox: refunded at once here).
   */
  providerRefund?: (orderId: string, by: Actor, reason?: string) => Promise<OrderRow | null>;
  /** Called after an order was canceled (e.g. close its payment at the provider). */
  onCanceled?: (orderId: string) => void;
}

/** A payment as the operator sees it (order detail, GET /admin/v1/payments). */
export function toAdminPayment(p: Selectable<PaymentsTable>): AdminPayment {
  return {
    payment_id: p.payment_id,
    provider: p.provider,
    provider_txn_id: p.provider_txn_id,
    amount: p.amount,
    currency: p.currency,
    environment: p.environment,
    store_amount: p.store_amount,
    store_currency: p.store_currency,
    status: p.status,
    reason: p.status === 'flagged' ? (p.reason ?? ((parseJson(p.detail) as { reason?: string } | null)?.reason ?? null)) : null,
    late: p.late === 1,
    detail: parseJson(p.detail),
    created_at: p.created_at,
  };
}

/** Operator views and actions on orders (PROTOCOL 11). */
export class OrderAdminService {
  constructor(private readonly d: OrderAdminDeps) {}

  /** Newest first; `next_cursor` is null on the last page. */
  async list(q: ListOrdersQuery): Promise<OrderPage> {
    const limit = q.limit ?? 50;
    const after = q.cursor === undefined ? null : orderCursor(q.cursor);
    const filter = { gameId: q.game_id, status: q.status, comboId: q.combo_id, referenceId: q.reference_id };
    const rows = await this.d.views.list(filter, after, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { data: page.map(toAdminOrder), next_cursor: rows.length > limit && last ? encodeCursor([last.created_at, last.order_id]) : null };
  }

  async detail(orderId: string): Promise<AdminOrderDetail> {
    const { store, views } = this.d;
    const order = await store.findById(store.db, orderId);
    if (!order) throw Errors.notFound(`order ${orderId} not found`);
    const [events, payments, notifications] = await Promise.all([views.events(orderId), views.payments(orderId), views.notifications(orderId)]);
    return {
      ...toAdminOrder(order),
      checkout_url: `${this.d.publicBaseUrl}/checkout/${formatOrderToken(order.order_id, order.token_secret)}`,
      events: timeline(order, events),
      payments: payments.map(toAdminPayment),
      notifications: notifications.map(({ notification: n, attempts }) => ({
        notification_id: n.notification_id,
        type: n.type,
        status: n.status,
        notify_url: withoutPassword(n.notify_url),
        attempt_count: n.attempts,
        // As in the notifications API: a settled notification has no next attempt.
        next_attempt_at: n.status === 'pending' ? n.next_attempt_at : null,
        last_error: n.last_error,
        created_at: n.created_at,
        updated_at: n.updated_at,
        delivered_at: n.delivered_at,
        attempts: attempts.map((a) => ({
          attempt_id: a.attempt_id,
          at: a.at,
          status_code: a.status_code,
          latency_ms: a.latency_ms,
          error: a.error,
          response_snippet: a.response_snippet,
        })),
      })),
    };
  }

  /**
   * paid|delivered -> refunded, and the `refund` notification; through a provider that returns
   * the money, refund_pending until it confirms. Orders are refunded whole: `amount`, when
   * given, must be the order's (400 otherwise). 409 from any other state.
   */
  async refund(orderId: string, by: Actor, reason?: string, amount?: number): Promise<AdminOrder> {
    if (amount !== undefined) {
      const { store } = this.d;
      const order = await store.findById(store.db, orderId);
      if (!order) throw Errors.notFound(`order ${orderId} not found`);
      if (amount !== order.amount) throw Errors.invalidRequest(`partial refunds are not supported: orders are refunded whole (amount must be ${order.amount}, the order's amount in minor units of ${order.currency}, or left out)`);
    }
    await this.d.checkRefund?.(orderId);
    const viaProvider = await this.d.providerRefund?.(orderId, by, reason);
    if (viaProvider) return toAdminOrder(viaProvider);
    const change: OperatorAction = { actor: by.actor, reason };
    const order = await this.act(orderId, by, change, 'order.refund', (trx, now) => this.d.lifecycle.refund(trx, orderId, now, change));
    this.d.onRefunded?.(orderId);
    return order;
  }

  /** created -> canceled. 409 from any other state. */
  async cancel(orderId: string, by: Actor, reason?: string): Promise<AdminOrder> {
    const change: OperatorAction = { actor: by.actor, reason };
    const order = await this.act(orderId, by, change, 'order.cancel', async (trx, now) => {
      // Past expires_at an order is expired, recorded by the sweeper or not yet (clients already
      // see it so): it is expired here first, and the cancel then answers 409 (which rolls the
      // expiry back with it; the sweeper records it).
      await this.d.lifecycle.expire(trx, orderId, now);
      return this.d.lifecycle.cancel(trx, orderId, now, change);
    });
    this.d.onCanceled?.(orderId);
    return order;
  }

  /** One operator transition and its audit record, in one transaction. */
  private async act(
    orderId: string,
    by: Actor,
    { reason }: OperatorAction,
    action: string,
    change: (trx: Transaction<DB>, now: number) => Promise<TransitionResult>,
  ): Promise<AdminOrder> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    const row = await store.transaction(async (trx) => {
      const r = await change(trx, now);
      if (!r.order) throw Errors.notFound(`order ${orderId} not found`);
      if (!r.changed) throw Errors.invalidState(`order ${orderId} is ${r.order.status}; ${action.replace('order.', '')} is not allowed`);
      await recordAudit(trx, ids, now, { by, game: r.order.game_id, action, target: orderId, detail: { from: r.from, to: r.order.status, reason } });
      return r.order;
    });
    return toAdminOrder(row);
  }
}

export function toAdminOrder(o: OrderRow): AdminOrder {
  return {
    order_id: o.order_id,
    game_id: o.game_id,
    reference_id: o.reference_id,
    combo_id: o.combo_id,
    product_id: o.product_id,
    platform: o.platform,
    notify_url: withoutPassword(o.notify_url),
    quantity: o.quantity,
    meta: parseJson(o.meta),
    context: o.context,
    amount: o.amount,
    currency: o.currency,
    status: o.status,
    is_sandbox: o.is_sandbox === 1,
    late_payment: o.late_payment === 1,
    created_at: o.created_at,
    expires_at: o.expires_at,
    updated_at: o.updated_at,
    paid_at: o.paid_at,
    delivered_at: o.delivered_at,
    expired_at: o.expired_at,
    canceled_at: o.canceled_at,
    refunded_at: o.refunded_at,
  };
}

function parseJson(s: string | null): Record<string, unknown> | null {
  return s === null ? null : (JSON.parse(s) as Record<string, unknown>);
}

/** The sort key of the last row of a page: [created_at, order_id]. */
function isOrderCursor(v: unknown): v is [number, string] {
  return Array.isArray(v) && v.length === 2 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && /^\d{1,20}$/.test(v[1]);
}

function orderCursor(cursor: string): OrderCursor {
  const [createdAt, orderId] = decodeCursor<[number, string]>(cursor, isOrderCursor);
  return { createdAt, orderId };
}

/**
 * The order's state changes, oldest first, beginning with its creation. An order's creation is
 * recorded by the order row itself (`created_at`), so create-order writes one row, not two;
 * orders created before that have a stored creation event (from_status null), shown as stored.
 */
function timeline(order: OrderRow, events: OrderEventRow[]): AdminOrderDetail['events'] {
  const out = events.map((e) => ({ from_status: e.from_status, to_status: e.to_status, at: e.at, detail: parseJson(e.detail) }));
  if (!events.some((e) => e.from_status === null)) out.unshift({ from_status: null, to_status: 'created', at: order.created_at, detail: null });
  return out;
}
