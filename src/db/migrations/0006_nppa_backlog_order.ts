import type { Kysely } from 'kysely';

/**
 * The national-system upload keeps per-game state in the database, where every service
 * instance sharing it sees the same (src/compliance/uploader.ts, docs/compliance.md):
 * - paused_until: the game sends nothing before this time (Unix ms): the minute the national
 *   system blocks a game after 1006, the back-off after a system error, or the moment the
 *   oldest item of a re-timed backlog may be sent. Was per process for 1006 (another instance
 *   sent during the block) and per event for back-offs (events fell out of order).
 * - shift_ms, shift_at: the delay added to a backlog's recorded times, one for the whole
 *   backlog, as of shift_at: it shrinks slowly from then (a second per ten), so order and
 *   intervals are (nearly) kept and a game that is never quiet still catches up.
 * - last_ot: the latest `ot` (Unix s) the national system accepted for the game, the floor of
 *   a re-timed logout (never before its own login).
 * nppa_events.retime needs no change: an integer, from now on the number of re-times (3005).
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of ['paused_until', 'shift_ms', 'shift_at', 'last_ot']) {
    await db.schema.alterTable('nppa_leases').addColumn(column, 'bigint', (c) => c.notNull().defaultTo(0)).execute();
  }
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
