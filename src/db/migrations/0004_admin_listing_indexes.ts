import type { Kysely } from 'kysely';

/**
 * Operator listings at scale (10 million orders and sessions, docs/benchmarks.md):
 * - orders filtered by status (with or without a game) page newest first through
 *   (game_id, status, created_at, order_id); without a game the query reads each game's
 *   newest rows of that index and merges them (src/orders/admin-store.ts);
 * - sessions page newest first per game through (game_id, created_at, session_id), and the
 *   same per-game merge serves the listing without a game. Before, both sorted every
 *   matching row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('orders_game_status_created').on('orders').columns(['game_id', 'status', 'created_at', 'order_id']).execute();
  await db.schema.createIndex('sessions_game_created').on('sessions').columns(['game_id', 'created_at', 'session_id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
