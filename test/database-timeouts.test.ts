import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

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
