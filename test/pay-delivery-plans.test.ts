import SQLite from 'better-sqlite3';
import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_TYPES, migrateToLatest, openDatabase } from '../src/db/index.js';
import type { DB } from '../src/db/schema.js';
import { IdGenerator } from '../src/lib/ids.js';
import { NotificationStore } from '../src/notifications/store.js';
import { OrderLifecycle } from '../src/orders/lifecycle.js';
import { OrderStore, type OrderRow } from '../src/orders/store.js';
import { SandboxProvider } from '../src/payments/sandbox/index.js';
import { PaymentService } from '../src/payments/service.js';
import { PaymentStore } from '../src/payments/store.js';
import { createTestDatabase, storeDatabase, TEST_DB, type TestDatabase, testPool } from './helpers/db.js';
import { insertGames } from './helpers/sqlite-plans.js';

// Every statement the pay path (a sandbox payment: the payment, the order's paid transition
// and its ship_order) and the delivery path (claim, give back, record the attempt, deliver the
// order) send, with the plan the database makes for it. A statement that reads a table without
// an index (SQLite: SCAN; PostgreSQL, with sequential scans priced out: Seq Scan) fails here,
// whatever the table's size: each of these runs once per order, and a scan grows with the table.

const TABLES = ['orders', 'order_events', 'payments', 'notifications', 'notification_attempts', 'players'];
const CONTROL = /^(begin|commit|rollback|savepoint|release|set )/i;

describe(`pay and delivery statements use an index (${TEST_DB})`, () => {
  let tdb: TestDatabase;
  let kysely: Kysely<DB>;
  let explain: (q: CompiledQuery) => Promise<string[]>;
  const seen: CompiledQuery[] = [];

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const database = openDatabase(tdb.url);
    await migrateToLatest(database);
    await insertGames(database.db, 'g_a');
    await database.close();
    const log = (e: { level: string; query: CompiledQuery }) => void (e.level === 'query' && seen.push(e.query));
    if (TEST_DB === 'sqlite') {
      const raw = new SQLite(tdb.url.slice('sqlite:'.length));
      kysely = new Kysely<DB>({ dialect: new SqliteDialect({ database: raw }), log });
      explain = async (q) =>
        raw
          .prepare(`EXPLAIN QUERY PLAN ${q.sql}`)
          .all(...(q.parameters as unknown[]))
          .map((r) => (r as { detail: string }).detail);
    } else {
      kysely = new Kysely<DB>({ dialect: new PostgresDialect({ pool: testPool({ connectionString: tdb.url, max: 2, types: SERVICE_TYPES }) }), log });
      // Sequential scans priced out: what is left of one is a read no index can serve.
      explain = (q) =>
        kysely.transaction().execute(async (trx: Transaction<DB>) => {
          await trx.executeQuery(CompiledQuery.raw('set local enable_seqscan = off'));
          const r = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`EXPLAIN ${q.sql}`, [...q.parameters]));
          return r.rows.map((row) => row['QUERY PLAN']);
        });
    }
  });
  afterAll(async () => {
    await kysely?.destroy();
    await tdb?.drop();
  });

  /** The statements `run` sent (not transaction control), each with its plan. */
  const plansOf = async (run: () => Promise<unknown>): Promise<{ sql: string; plan: string[] }[]> => {
    seen.length = 0;
    await run();
    const sent = seen.filter((q) => !CONTROL.test(q.sql.trim()));
    return Promise.all(sent.map(async (q) => ({ sql: q.sql, plan: await explain(q) })));
  };

  /**
   * Plan lines that read one of the tables whole: SQLite's SCAN; PostgreSQL's Seq Scan, or an
   * index read with no Index Cond (every entry of some index, which is what is left when none
   * serves and sequential scans are priced out), and a sort (rows in an order no index gave:
   * each of them read first).
   */
  const scans = (plan: string[]) =>
    plan.filter((line, i) => {
      if (TEST_DB === 'postgres' && /Sort Key:/.test(line)) return true;
      const table = TABLES.find((t) => new RegExp(TEST_DB === 'sqlite' ? `^SCAN ${t}\\b` : ` on ${t}\\b`).test(line.trim()));
      if (!table || TEST_DB === 'sqlite') return table !== undefined;
      if (/Seq Scan/.test(line)) return true;
      if (!/Index (Only )?Scan/.test(line)) return false;
      const own = plan.slice(i + 1).findIndex((l) => l.includes('->'));
      return !plan.slice(i + 1, own === -1 ? undefined : i + 1 + own).some((l) => l.includes('Index Cond:'));
    });

  const expectIndexed = (statements: { sql: string; plan: string[] }[], atLeast: number) => {
    expect(statements.length).toBeGreaterThanOrEqual(atLeast);
    for (const s of statements) expect(scans(s.plan), `${s.sql}\n${s.plan.join('\n')}`).toEqual([]);
  };

  const ids = new IdGenerator();
  const SANDBOX_ON = new Map([['sandbox', { game_id: 'g_a', channel: 'sandbox', enabled: true, settings: {} }]]);
  const orderRow = (i: number, now: number): OrderRow => ({
    order_id: `ord_plan${i}`, game_id: 'g_a', reference_id: `r${i}`, combo_id: `p${i}`, product_id: 'gem_60', platform: 'ios',
    notify_url: 'https://game.example/notify', quantity: 1, meta: null, context: null, amount: 600, currency: 'CNY', status: 'created',
    token_secret: 's'.repeat(32), is_sandbox: 0, late_payment: 0, created_at: now, expires_at: now + 900_000, updated_at: now,
    paid_at: null, delivered_at: null, expired_at: null, canceled_at: null, refunded_at: null,
  });

  /** The pay path's parts over the logging handle (SQLite: through Kysely, so every statement is seen). */
  const payingParts = () => {
    const orders = new OrderStore(storeDatabase(kysely, TEST_DB));
    const lifecycle = new OrderLifecycle({ store: orders, ids });
    const payments = new PaymentService({ payments: new PaymentStore(storeDatabase(kysely, TEST_DB)), orders, lifecycle, providers: [new SandboxProvider()], clock: { now: () => Date.now() }, ids });
    return { orders, lifecycle, payments };
  };

  it('paying an order: the payment, the order read once, its paid transition and event, the ship_order', async () => {
    const { orders, lifecycle, payments } = payingParts();
    const order = orderRow(1, Date.now());
    await orders.insert(kysely, order);
    const statements = await plansOf(async () => {
      const r = await payments.pay(order, SANDBOX_ON, 'sandbox');
      expect(r).toMatchObject({ kind: 'confirmed', outcome: { status: 'accepted' }, order: { status: 'paid' } });
    });
    // findByTxn, findById, the paid update, its event, the ship_order, the payment.
    expect(statements.filter((s) => /select .* from "orders"/i.test(s.sql))).toHaveLength(1);
    expectIndexed(statements, 6);
  });

  it('delivering a ship_order: claim, give back, claim again, record the attempt and deliver the order', async () => {
    const { orders, lifecycle, payments } = payingParts();
    const order = orderRow(2, Date.now());
    await orders.insert(kysely, order);
    await payments.pay(order, SANDBOX_ON, 'sandbox');
    const store = new NotificationStore(storeDatabase(kysely, TEST_DB), lifecycle);
    const statements = await plansOf(async () => {
      const now = Date.now() + 1000;
      const [first] = await store.claimDue(now, 16, now + 60_000, 'plan-a');
      expect(first).toBeDefined();
      await store.defer(first!.notification_id, 'plan-a', now);
      const [n] = await store.claimDue(now + 1, 16, now + 60_000, 'plan-b');
      const outcome = { status: 'succeeded' as const, attempts: 1, next_attempt_at: now, last_error: null, delivered_at: now };
      const attempt = { attempt_id: `nta_${ids.next(now)}`, notification_id: n!.notification_id, at: now, status_code: 200, latency_ms: 1, error: null, response_snippet: 'OK' };
      const delivery = { orderId: order.order_id, eventId: `oev_${ids.next(now)}`, notificationId: n!.notification_id };
      expect(await store.recordAttempt({ notificationId: n!.notification_id, token: 'plan-b', now, shipOrderOf: order.order_id }, attempt, outcome, delivery)).toBe(true);
    });
    expect((await orders.findById(kysely, order.order_id))?.status).toBe('delivered');
    // claim, defer, claim, the attempt, the settle, the delivered update, its event.
    expectIndexed(statements, 7);
  });

  it("a ship_order settling for a refunded order: the order stays refunded, its refund's window opens", async () => {
    const { orders, lifecycle, payments } = payingParts();
    const order = orderRow(3, Date.now());
    await orders.insert(kysely, order);
    await payments.pay(order, SANDBOX_ON, 'sandbox');
    await kysely.transaction().execute((trx) => lifecycle.refund(trx, order.order_id, Date.now(), { actor: 'plan' }));
    const store = new NotificationStore(storeDatabase(kysely, TEST_DB), lifecycle);
    const now = Date.now() + 2000;
    const [n] = await store.claimDue(now, 16, now + 60_000, 'plan-c');
    expect(n).toMatchObject({ order_id: order.order_id, type: 'ship_order' });
    const statements = await plansOf(async () => {
      const outcome = { status: 'succeeded' as const, attempts: 1, next_attempt_at: now, last_error: null, delivered_at: now };
      const attempt = { attempt_id: `nta_${ids.next(now)}`, notification_id: n!.notification_id, at: now, status_code: 200, latency_ms: 1, error: null, response_snippet: 'OK' };
      const delivery = { orderId: order.order_id, eventId: `oev_${ids.next(now)}`, notificationId: n!.notification_id };
      expect(await store.recordAttempt({ notificationId: n!.notification_id, token: 'plan-c', now, shipOrderOf: order.order_id }, attempt, outcome, delivery)).toBe(true);
    });
    expect((await orders.findById(kysely, order.order_id))?.status).toBe('refunded');
    // the attempt, the settle, the delivered update (no row), the refund's window.
    expect(statements.some((s) => /"window_started_at"/.test(s.sql))).toBe(true);
    expectIndexed(statements, 4);
  });
});
