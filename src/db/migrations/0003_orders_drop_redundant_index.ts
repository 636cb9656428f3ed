import type { Kysely } from 'kysely';

/**
 * orders_game_created (game_id, order_id) is covered by orders_game_created_at
 * (game_id, created_at, order_id), which the admin listing uses; every order insert paid for
 * both.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('orders_game_created').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
