import { sql, type Kysely } from 'kysely';

/**
 * Open and closed sessions each get their own per-game index, newest first, so that the
 * operator's `open=true` and `open=false` listings read only their rows:
 * - with many players online, `open=false` on SQLite would walk past every open session at the
 *   newest end of (game_id, created_at, session_id) before it found a closed one, and
 *   `open=true` on PostgreSQL would collect and sort every open session (about 0.1 s at
 *   ~440,000 open sessions);
 * - the timeout sweep reads the oldest open sessions per game from the open index, so
 *   sessions_open (left_at, entered_at), which served only the sweep, goes: an enter-game still
 *   writes as many index entries as before, and a leave-game moves its entry from one index to
 *   the other, as it moved it within sessions_open.
 * Partial indexes: a row is in exactly one of the two, by whether left_at is null.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('sessions_open_created')
    .on('sessions')
    .columns(['game_id', 'created_at', 'session_id'])
    .where(sql.ref('left_at'), 'is', null)
    .execute();
  await db.schema
    .createIndex('sessions_closed_created')
    .on('sessions')
    .columns(['game_id', 'created_at', 'session_id'])
    .where(sql.ref('left_at'), 'is not', null)
    .execute();
  await db.schema.dropIndex('sessions_open').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
