import { sql, type Kysely } from 'kysely';

/**
 * nppa_events.sent_pi: the identity an accepted event was sent with: the player's `pi`, or ''
 * when sent as a guest (`ct=2` with a `di`); null while not accepted (and for events accepted
 * before this column). A session's logout is sent with the identity its login was accepted
 * with, so the national system never sees a guest login end in an authenticated logout (or
 * the reverse) when a `pi` is recorded or cleared mid-session (src/compliance/uploader.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('nppa_events').addColumn('sent_pi', 'text').execute();
  // The logins of a batch's sessions, found without reading the game's whole history (events
  // are never deleted): logins only, so logouts cost no index entry.
  await db.schema.createIndex('nppa_events_login').on('nppa_events').columns(['game_id', 'session_id']).where(sql.ref('bt'), '=', 1).execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
