import type { Kysely } from 'kysely';

/**
 * When a notification's retry window (NOTIFY_MAX_AGE_SECONDS) began: its creation, or the last
 * operator redelivery, which restarts the window. NULL means "created_at" (rows written by the
 * outbox, which does not know about windows).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('notifications').addColumn('window_started_at', 'bigint').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('notifications').dropColumn('window_started_at').execute();
}
