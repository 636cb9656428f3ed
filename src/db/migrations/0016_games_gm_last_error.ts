import type { Kysely } from 'kysely';

/**
 * games.gm_last_error / gm_last_error_at (Unix ms): the last failed GM request of the game (no
 * GM endpoint, unreachable, an error answer or an invalid role list) and when it happened, shown
 * to the operator (admin API's game, console) while partners are told only what is wrong.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('games').addColumn('gm_last_error', 'text').execute();
  await db.schema.alterTable('games').addColumn('gm_last_error_at', 'bigint').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
