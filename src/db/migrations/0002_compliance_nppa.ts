import type { Kysely } from 'kysely';

/**
 * National-system upload bookkeeping: per-event claims (locked_until/locked_by, so several
 * processes never send one event twice), the time actually sent when an event was re-timed
 * (ot_ms keeps the original), the national system's error code, a re-time flag for 3005
 * answers, and a per-game lease so one process at a time uploads a game (the 10 requests/s
 * limit is per game).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  const s = db.schema;
  await s.alterTable('nppa_events').addColumn('locked_until', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  await s.alterTable('nppa_events').addColumn('locked_by', 'text').execute();
  await s.alterTable('nppa_events').addColumn('sent_ot', 'bigint').execute();
  await s.alterTable('nppa_events').addColumn('errcode', 'integer').execute();
  await s.alterTable('nppa_events').addColumn('retime', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  // The uploader reads a game's pending events oldest behaviour first.
  await s.createIndex('nppa_events_game_status').on('nppa_events').columns(['game_id', 'status', 'ot_ms']).execute();
  await s
    .createTable('nppa_leases')
    .addColumn('game_id', 'text', (c) => c.primaryKey())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('nppa_leases').execute();
  await db.schema.dropIndex('nppa_events_game_status').execute();
  for (const c of ['retime', 'errcode', 'sent_ot', 'locked_by', 'locked_until']) await db.schema.alterTable('nppa_events').dropColumn(c).execute();
}
