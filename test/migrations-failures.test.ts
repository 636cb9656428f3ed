import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely, type Migration } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseUnusableError, migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { TEST_DB } from './helpers/db.js';

/**
 * A migration that fails the disk (SQLite): the operator is told which migration failed and
 * why, nothing of it is applied, and it runs once there is room again.
 */
describe.skipIf(TEST_DB !== 'sqlite')('SQLite migrations on a full disk', () => {
  let dir: string | undefined;
  let database: Database | undefined;
  afterEach(async () => {
    await database?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('names the migration and the full disk (SQLite rolled the transaction back itself), applies nothing, and succeeds with room again', async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'combo-migration-full-'));
    database = openDatabase(`sqlite:${path.join(dir, 'm.db')}`);
    await migrateToLatest(database);
    // A later release's migration that rewrites a table; the disk fills up halfway through.
    const rewrite: Migration = {
      async up(db: Kysely<any>) {
        await sql`create table big2 (x blob)`.execute(db);
        await sql`insert into big2 values (randomblob(200000))`.execute(db);
      },
    };
    const pages = (await sql<{ page_count: number }>`pragma page_count`.execute(database.db)).rows[0]!.page_count;
    await sql.raw(`pragma max_page_count = ${pages + 10}`).execute(database.db);
    const failed = await migrateToLatest(database, { ...migrations, '9999_rewrite': rewrite }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DatabaseUnusableError);
    expect((failed as Error).message).toMatch(/migration 9999_rewrite failed: database or disk is full/);
    const tables = await sql<{ name: string }>`select name from sqlite_master where name = 'big2'`.execute(database.db);
    expect(tables.rows).toEqual([]);
    await sql.raw('pragma max_page_count = 1073741823').execute(database.db);
    const retried = await migrateToLatest(database, { ...migrations, '9999_rewrite': rewrite });
    expect(retried.results?.map((r) => [r.migrationName, r.status])).toEqual([['9999_rewrite', 'Success']]);
  });
});
