import { PostgresAdapter, type Kysely } from 'kysely';

/**
 * SQLite: sessions_player_created (game_id, combo_id, created_at, session_id) goes. Every
 * enter-game wrote an entry to it on another player's leaf page, one more WAL page per session
 * in the request's commit; the same entries are now kept in a file beside the database, filled
 * by a worker thread (db/player-index.ts), and a player's sessions are read from there plus the
 * sessions it has not reached yet. PostgreSQL keeps the index: its inserts are not on one
 * thread's path, and it has no such file.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) return;
  await db.schema.dropIndex('sessions_player_created').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
