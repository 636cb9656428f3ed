import type { Kysely } from 'kysely';

/**
 * orders.request_hash goes: a replay compares the stored parameters themselves (every one is a
 * column of the order: orders/service.ts, sameParameters), so nothing read the hash, and every
 * new order wrote '' to it. On PostgreSQL the drop only marks the column gone; SQLite rewrites
 * the table once.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('orders').dropColumn('request_hash').execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
