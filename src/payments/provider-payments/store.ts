import type { Kysely, Selectable, Transaction, Updateable } from 'kysely';
import type { DB, ProviderPaymentsTable, ProviderRefundsTable } from '../../db/schema.js';
import type { PaymentAction } from '../provider.js';
import { DatabaseStore } from '../../db/database-store.js';

export type ProviderPaymentRow = Selectable<ProviderPaymentsTable>;
export type ProviderRefundRow = Selectable<ProviderRefundsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/**
 * Queries for payments held open at a provider (provider_payments) and refunds requested from
 * one (provider_refunds). The lost-callback job takes a due row under a lease: a guarded update
 * (locked_until < now) that only one instance wins, on SQLite and PostgreSQL alike.
 */
export class ProviderPaymentStore extends DatabaseStore {
  find(q: Q, provider: string, orderId: string): Promise<ProviderPaymentRow | undefined> {
    return q.selectFrom('provider_payments').selectAll().where('provider', '=', provider).where('order_id', '=', orderId).executeTakeFirst();
  }

  /** Records the action handed out for `mode` (the payment is open; its first check is due at `checkAt`). */
  async recordAction(provider: string, order: { order_id: string; game_id: string }, mode: string, action: PaymentAction, now: number, checkAt: number): Promise<void> {
    await this.transaction(async (trx) => {
      const before = await this.find(trx, provider, order.order_id);
      const actions = { ...(before ? (JSON.parse(before.actions) as Record<string, PaymentAction>) : {}), [mode]: action };
      if (!before) {
        await trx
          .insertInto('provider_payments')
          .values({ provider, order_id: order.order_id, game_id: order.game_id, state: 'open', actions: JSON.stringify(actions), checks: 0, next_check_at: checkAt, locked_until: 0, locked_by: null, created_at: now, updated_at: now })
          .onConflict((oc) => oc.columns(['provider', 'order_id']).doUpdateSet({ actions: JSON.stringify(actions), updated_at: now }))
          .execute();
      } else {
        await trx.updateTable('provider_payments').set({ actions: JSON.stringify(actions), state: 'open', updated_at: now }).where('provider', '=', provider).where('order_id', '=', order.order_id).execute();
      }
    });
  }

  async updatePayment(q: Q, provider: string, orderId: string, patch: Updateable<ProviderPaymentsTable>): Promise<void> {
    await q.updateTable('provider_payments').set(patch).where('provider', '=', provider).where('order_id', '=', orderId).execute();
  }

  /** Open payments of an order (any provider): checked at once, e.g. after the order was canceled. */
  async checkSoon(orderId: string, now: number): Promise<void> {
    await this.db.updateTable('provider_payments').set({ next_check_at: now }).where('order_id', '=', orderId).where('state', '=', 'open').execute();
  }

  duePayments(now: number, limit: number): Promise<ProviderPaymentRow[]> {
    return this.db.selectFrom('provider_payments').selectAll().where('state', '=', 'open').where('next_check_at', '<=', now).where('locked_until', '<', now).orderBy('next_check_at').limit(limit).execute();
  }

  /** Takes a due payment for `owner` until `until`; false when another instance holds it or has just checked it. */
  async leasePayment(row: ProviderPaymentRow, owner: string, now: number, until: number): Promise<boolean> {
    const r = await this.db
      .updateTable('provider_payments')
      .set({ locked_until: until, locked_by: owner })
      .where('provider', '=', row.provider)
      .where('order_id', '=', row.order_id)
      .where('state', '=', 'open')
      // Still due: another instance that checked it meanwhile has moved next_check_at on.
      .where('next_check_at', '<=', now)
      .where('locked_until', '<', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  findRefund(q: Q, refundId: string): Promise<ProviderRefundRow | undefined> {
    return q.selectFrom('provider_refunds').selectAll().where('refund_id', '=', refundId).executeTakeFirst();
  }

  async insertRefund(q: Q, row: ProviderRefundRow): Promise<void> {
    await q.insertInto('provider_refunds').values(row).execute();
  }

  /** Settles a refund in one of `from`; false when it was settled already (by a callback or a query). */
  async settleRefund(q: Q, refundId: string, from: ProviderRefundRow['status'][], patch: Updateable<ProviderRefundsTable>): Promise<boolean> {
    const r = await q.updateTable('provider_refunds').set(patch).where('refund_id', '=', refundId).where('status', 'in', from).executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  async updateRefund(q: Q, refundId: string, patch: Updateable<ProviderRefundsTable>): Promise<void> {
    await q.updateTable('provider_refunds').set(patch).where('refund_id', '=', refundId).execute();
  }

  dueRefunds(now: number, limit: number): Promise<ProviderRefundRow[]> {
    return this.db.selectFrom('provider_refunds').selectAll().where('status', '=', 'pending').where('next_check_at', '<=', now).where('locked_until', '<', now).orderBy('next_check_at').limit(limit).execute();
  }

  async leaseRefund(row: ProviderRefundRow, owner: string, now: number, until: number): Promise<boolean> {
    const r = await this.db
      .updateTable('provider_refunds')
      .set({ locked_until: until, locked_by: owner })
      .where('refund_id', '=', row.refund_id)
      .where('status', '=', 'pending')
      .where('next_check_at', '<=', now)
      .where('locked_until', '<', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** An order's refunds, newest first (the admin order detail). */
  refundsOf(q: Q, orderId: string): Promise<ProviderRefundRow[]> {
    return q.selectFrom('provider_refunds').selectAll().where('order_id', '=', orderId).orderBy('created_at', 'desc').execute();
  }
}

/** When an open payment or pending refund is checked next: growing delays, the last repeating. */
export const CHECK_DELAYS_MS = [10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 1_800_000] as const;

export function checkDelay(checks: number): number {
  return CHECK_DELAYS_MS[Math.min(checks, CHECK_DELAYS_MS.length - 1)]!;
}
