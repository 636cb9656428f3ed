import type { Kysely } from 'kysely';

/**
 * orders_created (created_at, order_id) goes. Its one reader was the operator listing of every
 * order without a game or another filter, which now reads each game's newest orders through
 * orders_game_created_at (game_id, created_at, order_id) and merges them in one statement, as
 * the listings without a game already did for a status or a player (OrderAdminStore.list,
 * db/per-game.ts). Every create-order writes an entry to each order index: this is one B-tree
 * fewer per new order.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('orders_created').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
