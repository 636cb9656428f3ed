import { Writable } from 'node:stream';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { DatabaseUnusableError, migrateToLatest, openDatabase, type Database, type LockTimeoutAttempt } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { startCli } from './helpers/cli.js';
import { createTestDatabase, lockWaiters, TEST_DB, type TestDatabase } from './helpers/db.js';
import { startService } from './helpers/service.js';

/**
 * DATABASE_MIGRATION_LOCK_TIMEOUT_MS (PostgreSQL): a migration whose DDL waits for its table's
 * lock behind a long transaction (here one that has read `sessions`, as a report or a pg_dump
 * does) gives up after the limit, so the table's traffic is not queued behind it, and is tried
 * again until it gets the lock. Migration 0009 (`DROP INDEX sessions_game_created`) is the
 * migration under test: it needs the sessions table's ACCESS EXCLUSIVE lock.
 */
const LAST = '0009_sessions_drop_game_created';
const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < LAST));
/** What a run from `before` applies: LAST and every later migration. */
const PENDING = Object.keys(migrations).filter((name) => name >= LAST);

describe.skipIf(TEST_DB !== 'postgres')('PostgreSQL migrations wait for table locks with a limit', () => {
  let tdb: TestDatabase;
  let database: Database;
  let holder: pg.Client | undefined;
  const clients: pg.Client[] = [];

  /** A database migrated up to the migration before LAST, and a transaction that has read sessions (ACCESS SHARE, held). */
  async function setUp(): Promise<void> {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, before);
    holder = await client();
    await holder.query('begin');
    await holder.query('select count(*) from sessions');
  }

  async function client(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: tdb.url });
    await c.connect();
    clients.push(c);
    return c;
  }

  async function indexExists(): Promise<boolean> {
    const { rows } = await (await client()).query("select 1 from pg_indexes where indexname = 'sessions_game_created'");
    return rows.length === 1;
  }

  afterEach(async () => {
    for (const c of clients.splice(0)) await c.end().catch(() => {});
    holder = undefined;
    await database?.close();
    await tdb?.drop();
  });

  it('gives up after the limit, lets the table be written meanwhile, and tries again until the lock is free', async () => {
    await setUp();
    let firstTimeout!: (a: LockTimeoutAttempt) => void;
    const timedOut = new Promise<LockTimeoutAttempt>((resolve) => (firstTimeout = resolve));
    const attempts: LockTimeoutAttempt[] = [];
    const run = migrateToLatest(database, migrations, {
      lockTimeoutMs: 100,
      lockRetryDelayMs: 20,
      onLockTimeout: (a) => {
        attempts.push(a);
        firstTimeout(a);
      },
    });
    expect(await timedOut).toEqual({ migration: LAST, attempt: 1, retryInMs: 20 });
    // The long transaction still holds its lock, and the sessions table takes writes: without the
    // limit this insert would queue behind the migration's lock request until the holder ended
    // (its own statement time-out fails it instead).
    const writer = await client();
    await writer.query('set statement_timeout = 10000');
    await writer.query("insert into sessions (game_id, session_id, combo_id, entered_at, created_at) values ('g', 's', 'p', 1, 1)");
    expect(await indexExists()).toBe(true);
    await holder!.query('rollback');
    const result = await run;
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(PENDING.map((name) => [name, 'Success']));
    expect(await indexExists()).toBe(false);
    expect(attempts.length).toBeGreaterThanOrEqual(1);
    expect(attempts.every((a, i) => a.migration === LAST && a.attempt === i + 1 && a.retryInMs === Math.min(20 * 2 ** i, 30_000))).toBe(true);
  });

  it('past the retry budget the run fails with a message naming the migration and what to do, and nothing of it is applied', async () => {
    await setUp();
    const failure = await migrateToLatest(database, migrations, { lockTimeoutMs: 50, lockRetryDelayMs: 10, lockRetryBudgetMs: 100 }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(DatabaseUnusableError);
    expect((failure as Error).message).toMatch(
      new RegExp(`^migration ${LAST} could not lock what it changes within 50 ms in \\d+ attempts over \\d+ s: a long transaction holds it \\(see pg_stat_activity\\); end that transaction and start again, or set DATABASE_MIGRATION_LOCK_TIMEOUT_MS=0 to wait for it without limit$`),
    );
    expect(await indexExists()).toBe(true);
    const { rows } = await (await client()).query('select name from kysely_migration where name = $1', [LAST]);
    expect(rows).toEqual([]);
  });

  it('0 waits for the lock without limit (no attempt given up)', async () => {
    await setUp();
    const attempts: LockTimeoutAttempt[] = [];
    const run = migrateToLatest(database, migrations, { lockTimeoutMs: 0, onLockTimeout: (a) => void attempts.push(a) });
    await lockWaiters(tdb.url, "the migration's DDL to wait on a lock");
    await holder!.query('rollback');
    const result = await run;
    expect(result.results?.map((r) => [r.migrationName, r.status])).toEqual(PENDING.map((name) => [name, 'Success']));
    expect(attempts).toEqual([]);
  });

  it('the service at start takes DATABASE_MIGRATION_LOCK_TIMEOUT_MS, logs each attempt given up, and starts once the lock is free', async () => {
    await setUp();
    const warnings: { msg: string; migration: string; attempt: number; retryInMs: number }[] = [];
    let firstWarning!: () => void;
    const warned = new Promise<void>((resolve) => (firstWarning = resolve));
    const logs = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) {
          const entry = JSON.parse(line);
          if (entry.migration) {
            warnings.push(entry);
            firstWarning();
          }
        }
        done();
      },
    });
    const starting = startService({ db: tdb, env: { DATABASE_MIGRATION_LOCK_TIMEOUT_MS: '100', LOG_LEVEL: 'warn' }, logDestination: logs });
    await warned;
    await holder!.query('rollback');
    const t = await starting;
    try {
      expect(await indexExists()).toBe(false);
      expect(warnings[0]).toMatchObject({
        level: 40,
        msg: 'a migration waited too long for a table lock (a long transaction holds it); its attempt was rolled back and will be tried again',
        migration: LAST,
        attempt: 1,
        retryInMs: 1000,
      });
    } finally {
      await t.stop();
    }
  });

  it('npm run migrate (the CLI) takes DATABASE_MIGRATION_LOCK_TIMEOUT_MS, says on stderr that it tries again, and applies the migration once the lock is free', async () => {
    await setUp();
    const cli = startCli(['migrate'], { DATABASE_URL: tdb.url, DATABASE_MIGRATION_LOCK_TIMEOUT_MS: '100' });
    await new Promise<void>((resolve) => {
      let stderr = '';
      cli.child.stderr.on('data', (d) => {
        stderr += String(d);
        if (stderr.includes('\n')) resolve();
      });
    });
    await holder!.query('rollback');
    const done = await cli.exited;
    expect(done.stderr.split('\n')[0]).toBe(`migration ${LAST} waited more than 100 ms for a table lock (attempt 1; a long transaction holds it): rolled back, trying again in 1 s`);
    expect([done.code, done.stdout]).toEqual([0, `applied: ${PENDING.join(', ')}\n`]);
    expect(await indexExists()).toBe(false);
  });
});
