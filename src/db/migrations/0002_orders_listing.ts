import type { Kysely } from 'kysely';

/**
 * Operator order listing pages newest first by (created_at, order_id): decimal order ids gain a
 * digit around 2031, so their text order is not time order forever; created_at is.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('orders_created').on('orders').columns(['created_at', 'order_id']).execute();
  await db.schema.createIndex('orders_game_created_at').on('orders').columns(['game_id', 'created_at', 'order_id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
