import { PostgresAdapter, type Kysely } from 'kysely';

/**
 * SQLite: orders_player_created (game_id, combo_id, created_at, order_id) goes, as
 * sessions_player_created did (0011). Every create-order wrote an entry to it on another
 * player's leaf page, one more WAL page per order in the request's commit; the same entries are
 * now kept in the file beside the database, filled by a worker thread (db/player-index.ts), and
 * a player's orders are read from there plus the orders it has not reached yet. PostgreSQL keeps
 * the index.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await db.schema.dropIndex('orders_player_created').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
