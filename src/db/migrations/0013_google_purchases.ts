import { sql, type Kysely } from 'kysely';

/**
 * google_purchases: each Google Play purchase token the service has verified as bought for one
 * of its orders (payments.md 3-4), written before the order is paid. `state` is `owed` until
 * the purchase is settled (the order paid and the purchase consumed), then `consumed`; a
 * purchase that paid nothing (refused, flagged) is `rejected` and left unconsumed, which Google
 * refunds by itself after three days. The consume job retries owed rows at next_attempt_at,
 * so a crash between the payment and the consume never loses the consume.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('google_purchases')
    .addColumn('purchase_token', 'text', (c) => c.primaryKey())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text', (c) => c.notNull())
    .addColumn('product_id', 'text', (c) => c.notNull())
    .addColumn('google_order_id', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('google_purchases_order').on('google_purchases').columns(['order_id']).execute();
  await db.schema
    .createIndex('google_purchases_owed')
    .on('google_purchases')
    .columns(['next_attempt_at'])
    .where(sql.ref('state'), '=', 'owed')
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
