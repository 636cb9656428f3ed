import type { Kysely } from 'kysely';

/**
 * The initial schema for every domain. Portable types only (text, integer, bigint), so one
 * migration serves SQLite and PostgreSQL. Times: bigint Unix ms. Money: bigint minor units.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const s = db.schema;
  await s
    .createTable('games')
    .addColumn('game_id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('iap_enabled', 'integer', (c) => c.notNull())
    .addColumn('sandbox_payments', 'integer', (c) => c.notNull())
    .addColumn('order_ttl_seconds', 'integer', (c) => c.notNull())
    .addColumn('gm_url', 'text')
    .addColumn('rate_limit_per_second', 'integer', (c) => c.notNull())
    .addColumn('nppa_app_id', 'text')
    .addColumn('nppa_biz_id', 'text')
    .addColumn('nppa_secret_enc', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await s
    .createTable('game_keys')
    .addColumn('key_id', 'text', (c) => c.primaryKey())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('game_keys_game').on('game_keys').columns(['game_id', 'created_at']).execute();

  await s
    .createTable('products')
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('product_id', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('price', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('active', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('products_pk', ['game_id', 'product_id'])
    .execute();

  await s
    .createTable('orders')
    .addColumn('order_id', 'text', (c) => c.primaryKey())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('reference_id', 'text', (c) => c.notNull())
    .addColumn('combo_id', 'text', (c) => c.notNull())
    .addColumn('product_id', 'text', (c) => c.notNull())
    .addColumn('platform', 'text', (c) => c.notNull())
    .addColumn('notify_url', 'text', (c) => c.notNull())
    .addColumn('quantity', 'integer', (c) => c.notNull())
    .addColumn('meta', 'text')
    .addColumn('context', 'text')
    .addColumn('amount', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('token_secret', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('is_sandbox', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('late_payment', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('paid_at', 'bigint')
    .addColumn('delivered_at', 'bigint')
    .addColumn('expired_at', 'bigint')
    .addColumn('canceled_at', 'bigint')
    .addColumn('refunded_at', 'bigint')
    .addUniqueConstraint('orders_game_reference', ['game_id', 'reference_id'])
    .execute();
  await s.createIndex('orders_game_created').on('orders').columns(['game_id', 'order_id']).execute();
  await s.createIndex('orders_status_expires').on('orders').columns(['status', 'expires_at']).execute();
  await s.createIndex('orders_player').on('orders').columns(['game_id', 'combo_id', 'created_at']).execute();

  await s
    .createTable('order_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('order_id', 'text', (c) => c.notNull())
    .addColumn('from_status', 'text')
    .addColumn('to_status', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('detail', 'text')
    .execute();
  await s.createIndex('order_events_order').on('order_events').columns(['order_id', 'at']).execute();

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
    .addUniqueConstraint('payments_provider_txn', ['provider', 'provider_txn_id'])
    .execute();
  await s.createIndex('payments_order').on('payments').columns(['order_id']).execute();

  await s
    .createTable('notifications')
    .addColumn('notification_id', 'text', (c) => c.primaryKey())
    .addColumn('order_id', 'text', (c) => c.notNull())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('notify_url', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  await s.createIndex('notifications_due').on('notifications').columns(['status', 'next_attempt_at']).execute();
  await s.createIndex('notifications_order').on('notifications').columns(['order_id', 'created_at']).execute();
  await s.createIndex('notifications_game').on('notifications').columns(['game_id', 'status', 'notification_id']).execute();

  await s
    .createTable('notification_attempts')
    .addColumn('attempt_id', 'text', (c) => c.primaryKey())
    .addColumn('notification_id', 'text', (c) => c.notNull())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('latency_ms', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('response_snippet', 'text')
    .execute();
  await s.createIndex('notification_attempts_ntf').on('notification_attempts').columns(['notification_id', 'at']).execute();

  await s
    .createTable('sessions')
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('combo_id', 'text', (c) => c.notNull())
    .addColumn('entered_at', 'bigint')
    .addColumn('left_at', 'bigint')
    .addColumn('close_reason', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sessions_pk', ['game_id', 'session_id'])
    .execute();
  await s.createIndex('sessions_player').on('sessions').columns(['game_id', 'combo_id', 'created_at']).execute();
  await s.createIndex('sessions_open').on('sessions').columns(['left_at', 'entered_at']).execute();

  await s
    .createTable('nppa_events')
    .addColumn('event_id', 'text', (c) => c.primaryKey())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('session_id', 'text', (c) => c.notNull())
    .addColumn('combo_id', 'text', (c) => c.notNull())
    .addColumn('bt', 'integer', (c) => c.notNull())
    .addColumn('ot_ms', 'bigint', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('uploaded_at', 'bigint')
    .execute();
  await s.createIndex('nppa_events_due').on('nppa_events').columns(['status', 'game_id', 'next_attempt_at']).execute();

  await s
    .createTable('players')
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('combo_id', 'text', (c) => c.notNull())
    .addColumn('pi', 'text')
    .addColumn('birth_date', 'text')
    .addColumn('banned', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('players_pk', ['game_id', 'combo_id'])
    .execute();

  await s
    .createTable('partners')
    .addColumn('partner_id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('rate_limit_per_second', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await s
    .createTable('partner_keys')
    .addColumn('key_id', 'text', (c) => c.primaryKey())
    .addColumn('partner_id', 'text', (c) => c.notNull())
    .addColumn('secret_enc', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await s.createIndex('partner_keys_partner').on('partner_keys').columns(['partner_id', 'created_at']).execute();
  await s
    .createTable('partner_games')
    .addColumn('partner_id', 'text', (c) => c.notNull())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('partner_games_pk', ['partner_id', 'game_id'])
    .execute();
  await s
    .createTable('bindings')
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('partner_id', 'text', (c) => c.notNull())
    .addColumn('partner_user_id', 'text', (c) => c.notNull())
    .addColumn('combo_id', 'text', (c) => c.notNull())
    .addColumn('role_id', 'text', (c) => c.notNull())
    .addColumn('bound_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('bindings_pk', ['game_id', 'partner_id', 'partner_user_id'])
    .execute();

  await s
    .createTable('audit_log')
    .addColumn('audit_id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'bigint', (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('detail', 'text')
    .execute();

  await s
    .createTable('service_state')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
