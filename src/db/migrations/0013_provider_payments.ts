import { sql, type Kysely } from 'kysely';

/**
 * Payments that the provider holds open, and refunds that return money (payments.md 3-5):
 * - provider_payments: one row per order and web channel (`wechat`, `alipay`) whose payment
 *   was started at the provider (out_trade_no = the order id): the client actions handed out
 *   (JSON by mode, so asking again answers the same one), its state (`open`, `paid`,
 *   `closed`), and when the lost-callback job queries it next (next_check_at, checks), under
 *   a lease (locked_until, locked_by) so one instance at a time works on it.
 * - provider_refunds: one row per refund requested from a provider (refund_id = our
 *   out_refund_no): `pending` until the provider confirms (`succeeded`) or refuses
 *   (`failed`); the job queries pending ones at growing intervals, under the same kind of lease.
 * Orders gain the statuses `refund_pending` and `refund_failed` (orders.status is text).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s
    .createTable('provider_payments')
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text', (c) => c.notNull())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('actions', 'text', (c) => c.notNull())
    .addColumn('checks', 'integer', (c) => c.notNull())
    .addColumn('next_check_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('provider_payments_pk', ['provider', 'order_id'])
    .execute();
  await s.createIndex('provider_payments_due').on('provider_payments').columns(['next_check_at']).where(sql.ref('state'), '=', 'open').execute();

  await s
    .createTable('provider_refunds')
    .addColumn('refund_id', 'text', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text', (c) => c.notNull())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('provider_txn_id', 'text', (c) => c.notNull())
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('provider_refund_id', 'text')
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('detail', 'text')
    .addColumn('checks', 'integer', (c) => c.notNull())
    .addColumn('next_check_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('provider_refunds_order').on('provider_refunds').columns(['order_id', 'created_at']).execute();
  await s.createIndex('provider_refunds_due').on('provider_refunds').columns(['next_check_at']).where(sql.ref('status'), '=', 'pending').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
