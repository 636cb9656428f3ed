import { afterEach, describe, expect, it } from 'vitest';
import { migrateToLatest, migrationsApplied, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';

/**
 * Every set of migrations a commit of this repository has shipped (git log of
 * src/db/migrations), including the sets made while branches with a migration numbered 0002
 * each were merged: a database left at any of them upgrades to the latest.
 */
const SHIPPED: string[][] = [
  ['0001_initial'],
  ['0001_initial', '0002_compliance_nppa'],
  ['0001_initial', '0002_orders_listing'],
  ['0001_initial', '0002_notifications_window'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing', '0003_orders_drop_redundant_index'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing', '0003_orders_drop_redundant_index', '0004_admin_listing_indexes'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing', '0003_orders_drop_redundant_index', '0004_admin_listing_indexes', '0005_sessions_open_closed_indexes'],
];

describe('upgrading a database left at an earlier set of migrations', () => {
  let tdb: TestDatabase | undefined;
  let database: Database | undefined;
  afterEach(async () => {
    await database?.close();
    await tdb?.drop();
    database = tdb = undefined;
  });

  it.each(SHIPPED.map((set) => [set.join(', '), set] as const))('from %s', async (_name, set) => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, Object.fromEntries(set.map((name) => [name, migrations[name]!])));
    expect(await migrationsApplied(database.db)).toBe(false);
    const result = await migrateToLatest(database);
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(
      Object.keys(migrations).filter((name) => !set.includes(name)).map((name) => [name, 'Success']),
    );
    expect(await migrationsApplied(database.db)).toBe(true);
  });
});
