import type { Kysely } from 'kysely';

/**
 * games.last_used_key_id: the key the game most recently signed a server API request with
 * (operators.md 2). Notifications and GM calls are signed with it; null (a game that never
 * called) means its oldest active key. Written only when the key a game uses changes.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('games').addColumn('last_used_key_id', 'text').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
