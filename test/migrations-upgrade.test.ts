import { sql, type Kysely, type Migration } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { ComplianceStore } from '../src/compliance/store.js';
import { migrateToLatest, migrationsApplied, openDatabase, type Database } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { OrderAdminStore } from '../src/orders/admin-store.js';
import { createTestDatabase, storeDatabase, type TestDatabase } from './helpers/db.js';

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
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing', '0003_orders_drop_redundant_index', '0004_admin_listing_indexes', '0005_sessions_open_closed_indexes', '0006_nppa_backlog_order'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing', '0003_orders_drop_redundant_index', '0004_admin_listing_indexes', '0005_sessions_open_closed_indexes', '0006_nppa_backlog_order', '0007_nppa_sent_identity', '0008_nppa_leases_shift_at'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing', '0003_orders_drop_redundant_index', '0004_admin_listing_indexes', '0005_sessions_open_closed_indexes', '0006_nppa_backlog_order', '0007_nppa_sent_identity', '0008_nppa_leases_shift_at', '0009_sessions_drop_game_created'],
  ['0001_initial', '0002_compliance_nppa', '0002_notifications_window', '0002_orders_listing', '0003_orders_drop_redundant_index', '0004_admin_listing_indexes', '0005_sessions_open_closed_indexes', '0006_nppa_backlog_order', '0007_nppa_sent_identity', '0008_nppa_leases_shift_at', '0009_sessions_drop_game_created', '0010_listing_status_statistics', '0011_sessions_player_index_derived'],
];

/** 0006 as it first shipped (9caf13d), before shift_at was added to it (c72eb8a). */
const FIRST_0006: Migration = {
  async up(db: Kysely<any>) {
    for (const column of ['paused_until', 'shift_ms', 'last_ot']) {
      await db.schema.alterTable('nppa_leases').addColumn(column, 'bigint', (c) => c.notNull().defaultTo(0)).execute();
    }
  },
};

/** A games row as the migrations before 0024 have it. */
const game = (game_id: string) => ({
  game_id, name: game_id, iap_enabled: 1, sandbox_payments: 0, order_ttl_seconds: 1800, gm_url: null, rate_limit_per_second: 10,
  nppa_app_id: null, nppa_biz_id: null, nppa_secret_enc: null, created_at: 1, updated_at: 2,
});

/** An orders row as the migrations before 0025 have it. */
const order = (order_id: string, game_id: string, created_at: number, more: { combo_id?: string; expires_at?: number } = {}) => ({
  order_id, game_id, reference_id: order_id, combo_id: 'c', product_id: 'p', platform: 'ios', notify_url: 'http://x/n',
  quantity: 1, meta: null, context: null, amount: 600, currency: 'CNY', status: 'created', token_secret: 's', is_sandbox: 0,
  late_payment: 0, created_at, expires_at: created_at + 1, updated_at: created_at, paid_at: null, delivered_at: null, expired_at: null, canceled_at: null, refunded_at: null,
  ...more,
});

/** The names of the orders table's indexes. */
async function orderIndexes(database: Database): Promise<string[]> {
  const q = database.dialect === 'postgres'
    ? sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'orders'`
    : sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'orders'`;
  return (await q.execute(database.db)).rows.map((r) => r.name);
}

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

  it('a migration that fails halfway leaves nothing of itself, and runs whole next time', async () => {
    // As a process killed between two of its statements: on SQLite too, the first is undone.
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database);
    let fail = true;
    const halfway: Migration = {
      async up(db: Kysely<any>) {
        await db.schema.createTable('halfway_a').addColumn('x', 'integer').execute();
        if (fail) throw new Error('killed between two statements');
        await db.schema.createTable('halfway_b').addColumn('x', 'integer').execute();
      },
    };
    const list = { ...migrations, '9999_halfway': halfway };
    await expect(migrateToLatest(database, list)).rejects.toThrow('killed between two statements');
    const tables = async () => (await database!.db.introspection.getTables()).map((t) => t.name).filter((n) => n.startsWith('halfway'));
    expect(await tables()).toEqual([]);
    fail = false;
    await migrateToLatest(database, list);
    expect((await tables()).sort()).toEqual(['halfway_a', 'halfway_b']);
  });

  it('from 0006 as it first shipped: nppa_leases gets its shift_at, and the uploader can save its progress', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    const upTo0005 = SHIPPED.find((set) => set.at(-1) === '0005_sessions_open_closed_indexes')!;
    await migrateToLatest(database, { ...Object.fromEntries(upTo0005.map((name) => [name, migrations[name]!])), '0006_nppa_backlog_order': FIRST_0006 });
    const columns = async () => (await database!.db.introspection.getTables()).find((t) => t.name === 'nppa_leases')!.columns.map((c) => c.name);
    expect(await columns()).not.toContain('shift_at');
    await migrateToLatest(database);
    expect(await columns()).toContain('shift_at');
    const store = new ComplianceStore(database);
    await database.db.insertInto('nppa_leases').values({ game_id: 'g', owner: 'me', expires_at: Date.now() + 60_000, paused_until: 0, shift_ms: 0, shift_at: 0, last_ot: 0 }).execute();
    await store.saveProgress(database.db, 'g', 'me', { shiftMs: 5000, shiftAt: 1, lastOt: 2 });
    expect(await database.db.selectFrom('nppa_leases').select(['shift_ms', 'shift_at', 'last_ot']).executeTakeFirstOrThrow()).toEqual({ shift_ms: 5000, shift_at: 1, last_ot: 2 });
  });

  it('to 0012: existing games keep their sandbox setting as a sandbox channel; payments keep their rows, game and flag reason', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    const upTo0011 = SHIPPED.at(-1)!;
    await migrateToLatest(database, Object.fromEntries(upTo0011.map((name) => [name, migrations[name]!])));
    const db = database.db as unknown as Kysely<any>;
    const game = (game_id: string, sandbox_payments: number) => ({
      game_id, name: game_id, iap_enabled: 1, sandbox_payments, order_ttl_seconds: 1800, gm_url: null, rate_limit_per_second: 10,
      nppa_app_id: null, nppa_biz_id: null, nppa_secret_enc: null, created_at: 1, updated_at: 2,
    });
    await db.insertInto('games').values([game('with_sandbox', 1), game('without_sandbox', 0)]).execute();
    const order = (order_id: string) => ({
      order_id, game_id: 'with_sandbox', reference_id: order_id, combo_id: 'c', product_id: 'p', platform: 'ios', notify_url: 'http://x/n',
      quantity: 1, meta: null, context: null, amount: 600, currency: 'CNY', status: 'paid', token_secret: 's', request_hash: '', is_sandbox: 1,
      late_payment: 0, created_at: 1, expires_at: 2, updated_at: 1, paid_at: 1, delivered_at: null, expired_at: null, canceled_at: null, refunded_at: null,
    });
    await db.insertInto('orders').values([order('o1'), order('o2')]).execute();
    const payment = (payment_id: string, order_id: string, status: string, detail: string | null) => ({
      payment_id, order_id, provider: 'sandbox', provider_txn_id: `t_${payment_id}`, amount: 600, currency: 'CNY', status, late: 0, detail, created_at: 1,
    });
    await db.insertInto('payments').values([payment('p1', 'o1', 'accepted', null), payment('p2', 'o2', 'flagged', '{"reason":"amount_mismatch","expected":null}')]).execute();

    await migrateToLatest(database);
    expect(await db.selectFrom('game_channels').select(['game_id', 'channel', 'enabled', 'settings', 'secrets_enc']).execute()).toEqual([
      { game_id: 'with_sandbox', channel: 'sandbox', enabled: 1, settings: '{}', secrets_enc: null },
    ]);
    const pays = await db.selectFrom('payments').select(['payment_id', 'game_id', 'status', 'reason', 'environment', 'store_amount']).orderBy('payment_id').execute();
    expect(pays).toEqual([
      { payment_id: 'p1', game_id: 'with_sandbox', status: 'accepted', reason: null, environment: null, store_amount: null },
      { payment_id: 'p2', game_id: 'with_sandbox', status: 'flagged', reason: 'amount_mismatch', environment: null, store_amount: null },
    ]);
    // One accepted payment per provider transaction; the same transaction for another order is
    // kept as a flagged payment of that order.
    await expect(db.insertInto('payments').values({ ...payment('p3', 'o2', 'accepted', null), provider_txn_id: 't_p1' }).execute()).rejects.toThrow();
    await db.insertInto('payments').values({ ...payment('p4', 'o2', 'flagged', null), provider_txn_id: 't_p1' }).execute();
    await expect(db.insertInto('payments').values({ ...payment('p5', 'o2', 'flagged', null), provider_txn_id: 't_p1' }).execute()).rejects.toThrow();
  });

  it('to 0023: the audit log\'s entries get the game they are about (from their targets), no address', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, Object.fromEntries(Object.keys(migrations).filter((name) => name < '0023').map((name) => [name, migrations[name]!])));
    const db = database.db as unknown as Kysely<any>;
    // g_1's id is a prefix of g_10's: each target names one game.
    await db.insertInto('games').values([game('g_1'), game('g_10')]).execute();
    await db.insertInto('orders').values({
      order_id: 'o1', game_id: 'g_10', reference_id: 'r', combo_id: 'c', product_id: 'p', platform: 'ios', notify_url: 'http://x/n',
      quantity: 1, meta: null, context: null, amount: 600, currency: 'CNY', status: 'paid', token_secret: 's', is_sandbox: 1,
      late_payment: 0, created_at: 1, expires_at: 2, updated_at: 1, paid_at: 1, delivered_at: null, expired_at: null, canceled_at: null, refunded_at: null,
    }).execute();
    await db.insertInto('notifications').values({
      notification_id: 'n1', order_id: 'o1', game_id: 'g_10', type: 'ship_order', notify_url: 'http://x/n', body: '{}', status: 'failed', attempts: 1,
      next_attempt_at: 0, locked_until: 0, locked_by: null, last_error: null, created_at: 1, updated_at: 1, delivered_at: null, window_started_at: null,
    }).execute();
    const entries: [string, string][] = [
      ['game.create', 'g_1'], ['game.key.create', 'g_10/k1'], ['product.put', 'g_1/p'], ['game.channel.put', 'g_10/wechat'], ['player.put', 'g_1/c1'],
      ['reconciliation.run', 'g_10/wechat/2026-01-01'], ['notification.retry_all', 'g_1'], ['order.refund', 'o1'], ['order.cancel', 'gone'],
      ['notification.redeliver', 'n1'], ['partner.create', 'g_1'], ['operator.create', 'op_1'], ['secrets.rotate', 'key:k'],
    ];
    await db.insertInto('audit_log').values(entries.map(([action, target], i) => ({ audit_id: `aud_${i}`, at: i, actor: 'ADMIN_TOKEN', action, target, detail: null }))).execute();

    await migrateToLatest(database);
    const rows = await db.selectFrom('audit_log').select(['action', 'game_id', 'address']).orderBy('at').execute();
    expect(rows.map((r) => [r.action, r.game_id, r.address])).toEqual([
      ['game.create', 'g_1', null], ['game.key.create', 'g_10', null], ['product.put', 'g_1', null], ['game.channel.put', 'g_10', null], ['player.put', 'g_1', null],
      ['reconciliation.run', 'g_10', null], ['notification.retry_all', 'g_1', null], ['order.refund', 'g_10', null], ['order.cancel', null, null],
      ['notification.redeliver', 'g_10', null], ['partner.create', null, null], ['operator.create', null, null], ['secrets.rotate', null, null],
    ]);
  });

  it('to 0024: orders_created goes; every order is still listed, newest first across games', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, Object.fromEntries(Object.keys(migrations).filter((name) => name < '0024').map((name) => [name, migrations[name]!])));
    const db = database.db as unknown as Kysely<any>;
    expect(await orderIndexes(database)).toContain('orders_created');
    await db.insertInto('games').values([game('g_a'), game('g_b')]).execute();
    await db.insertInto('orders').values([order('o1', 'g_b', 10), order('o2', 'g_a', 30), order('o3', 'g_b', 20), order('o4', 'g_a', 20)]).execute();

    await migrateToLatest(database);
    expect(await orderIndexes(database)).not.toContain('orders_created');
    const store = new OrderAdminStore(storeDatabase(database.db, database.dialect));
    expect((await store.list({}, null, 10)).map((o) => o.order_id)).toEqual(['o2', 'o4', 'o3', 'o1']);
    expect((await store.list({}, { createdAt: 20, orderId: 'o4' }, 10)).map((o) => o.order_id)).toEqual(['o3', 'o1']);
  });

  it('to 0025: on SQLite orders_player_created goes (the player index beside the database holds its key); a player\'s orders are all still found', async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database, Object.fromEntries(Object.keys(migrations).filter((name) => name < '0025').map((name) => [name, migrations[name]!])));
    const db = database.db as unknown as Kysely<any>;
    expect(await orderIndexes(database)).toContain('orders_player_created');
    await db.insertInto('games').values([game('g_a'), game('g_b')]).execute();
    const open = { expires_at: 4_000_000_000_000 };
    await db.insertInto('orders').values([order('o1', 'g_a', 10, open), order('o2', 'g_b', 30, open), order('o3', 'g_a', 20, { combo_id: 'other', ...open }), order('o4', 'g_a', 40, open)]).execute();

    await migrateToLatest(database);
    if (database.dialect === 'sqlite') expect(await orderIndexes(database)).not.toContain('orders_player_created');
    else expect(await orderIndexes(database)).toContain('orders_player_created');
    const store = new OrderAdminStore(storeDatabase(database.db, database.dialect));
    expect((await store.list({ comboId: 'c' }, null, 10)).map((o) => o.order_id)).toEqual(['o4', 'o2', 'o1']);
    expect((await store.list({ comboId: 'c', gameId: 'g_a' }, { createdAt: 40, orderId: 'o4' }, 10)).map((o) => o.order_id)).toEqual(['o1']);
    const compliance = new ComplianceStore(database);
    expect(await compliance.monthSpending(database.db, 'g_a', 'c', 0, 100)).toEqual({ spent: 0, reserved: 1200 });
  });
});
