import type { Kysely } from 'kysely';

/**
 * notification_attempts_at: attempts by time, for a game's delivery health (the last hour's and
 * day's attempts per notify host, GET /admin/v1/games/:game_id/delivery-health). Attempts are
 * only inserted, at the index's right edge.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('notification_attempts_at').on('notification_attempts').columns(['at']).execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
