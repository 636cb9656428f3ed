import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { createTestDatabase, lockWaiters, TEST_DB, type TestDatabase, testPool } from './helpers/db.js';
import { admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';
import { paidOrder } from './helpers/paid-orders.js';
import { migrations } from '../src/db/migrations/index.js';
import type { DB } from '../src/db/schema.js';

/**
 * DATABASE_STATEMENT_TIMEOUT_MS (PostgreSQL): a request waiting on a lock that someone else
 * holds gets a retryable 503 instead of hanging with its pool connection; migrations run
 * without the limit. SQLite has its own busy time-out (tested in test/create-order.test.ts).
 */
describe.skipIf(TEST_DB !== 'postgres')('PostgreSQL statement time-out (DATABASE_STATEMENT_TIMEOUT_MS)', () => {
  let t: TestService;
  let game: TestGame;
  beforeAll(async () => {
    t = await startService({ env: { DATABASE_STATEMENT_TIMEOUT_MS: '300' } });
    game = await createGame(t);
  });
  afterAll(async () => t?.stop());

  /** Holds an ACCESS EXCLUSIVE lock on `table` (as an operator's ALTER TABLE would) until released. */
  async function lockTable(table: string): Promise<() => Promise<void>> {
    const c = new pg.Client({ connectionString: t.db.url });
    await c.connect();
    await c.query('begin');
    await c.query(`lock table ${table} in access exclusive mode`);
    return async () => {
      await c.query('rollback');
      await c.end();
    };
  }

  async function countOrders(referenceId: string): Promise<number> {
    const rows = await t.service.database.db.selectFrom('orders').select('order_id').where('reference_id', '=', referenceId).execute();
    return rows.length;
  }

  it('create-order behind a held lock: 503 service_unavailable, nothing stored; the retry after the lock creates the order', async () => {
    const body = orderBody();
    const release = await lockTable('orders');
    let r;
    try {
      r = await signed(t, game, 'POST', '/v1/server/create-order', body);
    } finally {
      await release();
    }
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ error: 'service_unavailable', message: 'the database did not answer in time; retry later' });
    expect(r.headers.get('x-trace-id')).toBeTruthy();
    expect(await countOrders(body.reference_id as string)).toBe(0);
    const retry = await signed(t, game, 'POST', '/v1/server/create-order', body);
    expect(retry.status).toBe(200);
    expect(await countOrders(body.reference_id as string)).toBe(1);
  });

  it('enter-game behind a held lock: 503, and the retry after the lock is stored', async () => {
    const body = { combo_id: 'p-timeout', session_id: `s-${Date.now()}` };
    const release = await lockTable('sessions');
    let r;
    try {
      r = await signed(t, game, 'POST', '/v1/server/enter-game', body);
    } finally {
      await release();
    }
    expect(r.status).toBe(503);
    expect(r.body.error).toBe('service_unavailable');
    const retry = await signed(t, game, 'POST', '/v1/server/enter-game', body);
    expect(retry.status).toBe(200);
    const rows = await t.service.database.db.selectFrom('sessions').select('session_id').where('session_id', '=', body.session_id).execute();
    expect(rows).toHaveLength(1);
  });

  it('a bulk redelivery (a large transaction) is not held to the limit: it waits out a lock longer than it, then answers 200', async () => {
    // POST .../notifications/redeliver may touch millions of rows after a long outage: a time-out
    // there would fail every retry alike.
    const { order, notificationId } = await paidOrder(t, game, 'http://127.0.0.1:9/notify');
    await t.service.database.db.updateTable('notifications').set({ status: 'failed', locked_until: 0, locked_by: null }).where('notification_id', '=', notificationId).execute();
    const c = new pg.Client({ connectionString: t.db.url });
    await c.connect();
    await c.query('begin');
    await c.query('select 1 from orders where order_id = $1 for update', [order.order_id]);
    const answer = admin(t, 'POST', `/admin/v1/games/${game.gameId}/notifications/redeliver`, { since: 0 });
    // Wait until the redelivery waits on the lock, then hold it past the 300 ms limit.
    await lockWaiters(t.db.url, 'the redelivery to wait on the order lock');
    await new Promise((resolve) => setTimeout(resolve, 600));
    await c.query('rollback');
    await c.end();
    const r = await answer;
    expect([r.status, r.body]).toEqual([200, { count: 1 }]);
  });

  it('the pool connections carry the limit as their default', async () => {
    const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(t.service.database.db);
    expect(rows[0]?.statement_timeout).toBe('300ms');
  });
});

describe.skipIf(TEST_DB !== 'postgres')('PostgreSQL statement time-out: migrations and the limit off', () => {
  let tdb: TestDatabase;
  let database: Database | undefined;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await database?.close();
    await tdb.drop();
  });

  it('a migration longer than the limit runs to the end, and the limit is back in force after it', async () => {
    database = openDatabase(tdb.url, { statementTimeoutMs: 200 });
    const slow = {
      '9001_slow': {
        up: async (db: Parameters<typeof migrateToLatest>[0]['db']) => {
          await sql`select pg_sleep(0.5)`.execute(db);
          await sql`create table slow_migration_done (x int)`.execute(db);
        },
      },
    };
    const result = await migrateToLatest(database, slow);
    expect(result.results?.map((m) => [m.migrationName, m.status])).toEqual([['9001_slow', 'Success']]);
    // The pool has one connection now (the migrations'): the same sleep outside them is ended.
    await expect(sql`select pg_sleep(0.5)`.execute(database.db)).rejects.toMatchObject({ code: '57014' });
    const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(database.db);
    expect(rows[0]?.statement_timeout).toBe('200ms');
  });

  it('an up-to-date database is not touched (no SET at all, so nothing can stay behind on a shared server connection); pending migrations each turn the limit off for their transaction only', async () => {
    // The SETs this run sends, seen through Kysely's query log on a real pool (PgBouncer keeps a
    // session SET on whichever server connection it ran on: other instances would inherit it).
    const fresh = await createTestDatabase();
    const seen: string[] = [];
    const pool = testPool({ connectionString: fresh.url, max: 2 });
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log: (e) => void seen.push(e.query.sql) });
    const base = openDatabase(fresh.url, { statementTimeoutMs: 200 });
    const logged: Database = { ...base, db };
    try {
      await migrateToLatest(logged, migrations);
      seen.length = 0;
      await migrateToLatest(logged, migrations);
      expect(seen.filter((q) => /statement_timeout/.test(q))).toEqual([]);
      const next = { ...migrations, '9002_next': { up: async (d: Kysely<any>) => void (await sql`create table next_migration_done (x int)`.execute(d)) } };
      await migrateToLatest(logged, next);
      expect(seen.filter((q) => /set local statement_timeout = 0/.test(q))).toHaveLength(1);
    } finally {
      await db.destroy();
      await base.close();
      await fresh.drop();
    }
  });

  it('a transaction left idle longer than the limit is ended by the server (the session default is set)', async () => {
    const db = openDatabase(tdb.url, { statementTimeoutMs: 200 });
    try {
      const { rows } = await sql<{ idle_in_transaction_session_timeout: string }>`show idle_in_transaction_session_timeout`.execute(db.db);
      expect(rows[0]?.idle_in_transaction_session_timeout).toBe('200ms');
    } finally {
      await db.close();
    }
  });

  it('0 (and the CLI, which passes none) sets no limit', async () => {
    for (const options of [{ statementTimeoutMs: 0 }, {}]) {
      const db = openDatabase(tdb.url, options);
      try {
        const a = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(db.db);
        expect(a.rows[0]?.statement_timeout).toBe('0');
        const b = await sql<{ idle_in_transaction_session_timeout: string }>`show idle_in_transaction_session_timeout`.execute(db.db);
        expect(b.rows[0]?.idle_in_transaction_session_timeout).toBe('0');
      } finally {
        await db.close();
      }
    }
  });
});
