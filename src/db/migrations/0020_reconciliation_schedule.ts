import type { Kysely } from 'kysely';

/**
 * The scheduled reconciliation (payments.md 6): one row per (game, channel, day) the schedule
 * takes on, so each is reconciled once however many instances run. An instance takes a row
 * under a lease (locked_until, locked_by) as the provider-payments job does; `state` is `due`
 * until a run got the statement (`done`, `reconciliation_id` its result), or the game no
 * longer has the channel (`skipped`). A run that could not get the statement is tried again
 * at `next_try_at`.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('reconciliation_schedule')
    .addColumn('game_id', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('date', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reconciliation_id', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_try_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('reconciliation_schedule_pk', ['date', 'game_id', 'channel'])
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
