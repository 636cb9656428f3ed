import type { Kysely } from 'kysely';

/**
 * nppa_leases.shift_at, for databases migrated by 0006 as it first shipped (9caf13d): the
 * column was then added to 0006 itself (c72eb8a), which such databases had already applied, so
 * they never got it and their national-system uploads failed. Added here when missing; a
 * database that ran the later 0006 has it already. Migrations that have shipped are never
 * edited again (src/db/migrations/index.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  const leases = (await db.introspection.getTables()).find((t) => t.name === 'nppa_leases');
  if (!leases || leases.columns.some((c) => c.name === 'shift_at')) return;
  await db.schema.alterTable('nppa_leases').addColumn('shift_at', 'bigint', (c) => c.notNull().defaultTo(0)).execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
