import type { Kysely } from 'kysely';

/**
 * sessions_game_created (game_id, created_at, session_id) goes: sessions_open_created and
 * sessions_closed_created (0005) hold the same entries between them, and the one listing that
 * read it (a game's sessions, open and closed alike) now reads both and merges them in one
 * statement (SessionStore.list). Every enter-game writes an entry to each session index:
 * this is one B-tree fewer per new session.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('sessions_game_created').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
