import type { Kysely } from 'kysely';

/**
 * Operator listings at scale (10 million orders and sessions, docs/benchmarks.md, "Scale"). Each listing
 * pages newest first; an index that both filters and orders lets a page read only its rows:
 * - orders by status (with or without a game): (game_id, status, created_at, order_id); without
 *   a game the query reads each game's newest rows and merges them (src/orders/admin-store.ts);
 * - orders of a player: (game_id, combo_id, created_at, order_id) replaces
 *   (game_id, combo_id, created_at), which could not give the order_id tie-break order, so
 *   SQLite preferred scanning the game's whole time index for one player;
 * - sessions per game: (game_id, created_at, session_id), also serving the listing without a
 *   game (per-game merge); sessions of a player: (game_id, combo_id, created_at, session_id)
 *   replaces (game_id, combo_id, created_at) for the same reason.
 * Before, these listings sorted or scanned every matching row: seconds at 10 million rows.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('orders_game_status_created').on('orders').columns(['game_id', 'status', 'created_at', 'order_id']).execute();
  await db.schema.createIndex('orders_player_created').on('orders').columns(['game_id', 'combo_id', 'created_at', 'order_id']).execute();
  await db.schema.dropIndex('orders_player').execute();
  await db.schema.createIndex('sessions_game_created').on('sessions').columns(['game_id', 'created_at', 'session_id']).execute();
  await db.schema.createIndex('sessions_player_created').on('sessions').columns(['game_id', 'combo_id', 'created_at', 'session_id']).execute();
  await db.schema.dropIndex('sessions_player').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
