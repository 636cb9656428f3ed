import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Real payment channels (payments.md 1-3):
 * - game_channels: one row per game and channel (`sandbox`, `apple`, `google`, ...): enabled,
 *   the channel's settings (JSON) and its secrets (JSON sealed with SECRETS_KEY). A game has no
 *   channel until an operator sets one; existing games keep their sandbox setting as a
 *   `sandbox` row (games.sandbox_payments is no longer read).
 * - products.store_product_ids: the product's ids in the app stores (JSON `{apple?, google?}`).
 * - order_account_tokens: the StoreKit `appAccountToken` (UUID) handed out for an order.
 * - payments: game_id, the store's environment, the price the store charged (its storefront's
 *   amount and currency) and why a payment was flagged. A provider transaction is accepted at
 *   most once (unique among accepted payments); a transaction submitted for another order is
 *   kept as a flagged payment of that order, so the unique key becomes (provider,
 *   provider_txn_id, order_id). SQLite cannot drop a table constraint: the table is rebuilt.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  const pg = db.getExecutor().adapter instanceof PostgresAdapter;

  await s
    .createTable('game_channels')
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('secrets_enc', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('game_channels_pk', ['game_id', 'channel'])
    .execute();
  await sql`insert into game_channels (game_id, channel, enabled, settings, secrets_enc, created_at, updated_at)
    select game_id, 'sandbox', 1, '{}', null, updated_at, updated_at from games where sandbox_payments = 1`.execute(db);

  await s.alterTable('products').addColumn('store_product_ids', 'text').execute();

  await s
    .createTable('order_account_tokens')
    .addColumn('app_account_token', 'text', (c) => c.primaryKey())
    .addColumn('order_id', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  if (pg) {
    for (const [name, type] of [['game_id', 'text'], ['environment', 'text'], ['store_amount', 'bigint'], ['store_currency', 'text'], ['reason', 'text']] as const) {
      await s.alterTable('payments').addColumn(name, type).execute();
    }
    await sql`update payments set game_id = o.game_id from orders o where o.order_id = payments.order_id`.execute(db);
    await s.alterTable('payments').dropConstraint('payments_provider_txn').execute();
  } else {
    await s.alterTable('payments').renameTo('payments_0011').execute();
    await s.dropIndex('payments_order').execute();
    await s
      .createTable('payments')
      .addColumn('payment_id', 'text', (c) => c.primaryKey())
      .addColumn('order_id', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('provider_txn_id', 'text', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addColumn('currency', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('late', 'integer', (c) => c.notNull())
      .addColumn('detail', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('game_id', 'text')
      .addColumn('environment', 'text')
      .addColumn('store_amount', 'bigint')
      .addColumn('store_currency', 'text')
      .addColumn('reason', 'text')
      .execute();
    await sql`insert into payments (payment_id, order_id, provider, provider_txn_id, amount, currency, status, late, detail, created_at, game_id)
      select p.payment_id, p.order_id, p.provider, p.provider_txn_id, p.amount, p.currency, p.status, p.late, p.detail, p.created_at,
        (select o.game_id from orders o where o.order_id = p.order_id)
      from payments_0011 p`.execute(db);
    await s.dropTable('payments_0011').execute();
    await s.createIndex('payments_order').on('payments').columns(['order_id']).execute();
  }
  // The flag reason of rows flagged before the column existed.
  await (pg
    ? sql`update payments set reason = (detail::json)->>'reason' where status = 'flagged' and detail is not null`
    : sql`update payments set reason = json_extract(detail, '$.reason') where status = 'flagged' and detail is not null`
  ).execute(db);
  await s.createIndex('payments_provider_txn_order').on('payments').columns(['provider', 'provider_txn_id', 'order_id']).unique().execute();
  await s
    .createIndex('payments_provider_txn_accepted')
    .on('payments')
    .columns(['provider', 'provider_txn_id'])
    .unique()
    .where(sql.ref('status'), '=', 'accepted')
    .execute();
  // The operator's list of flagged payments (newest first), all games or one.
  await s.createIndex('payments_flagged').on('payments').columns(['created_at', 'payment_id']).where(sql.ref('status'), '=', 'flagged').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
