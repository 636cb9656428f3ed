import type { Kysely } from 'kysely';

/**
 * Reconciliation (payments.md 6): one row per run of a channel's statement of one day against
 * the stored payments: what it found (counts, JSON), the differences (JSON list), or why it
 * failed. Listed newest first.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('reconciliations')
    .addColumn('reconciliation_id', 'text', (c) => c.primaryKey())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('date', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('counts', 'text')
    .addColumn('differences', 'text')
    .addColumn('error', 'text')
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('reconciliations_created').on('reconciliations').columns(['created_at', 'reconciliation_id']).execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
