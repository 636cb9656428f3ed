/**
 * Crash safety of provider callbacks (issue 43, "How it is tested"): the real service process
 * is killed with SIGKILL between a WeChat Pay callback's (or an Alipay notify's) arrival and
 * its answer, restarted on the same database, and the provider sends the callback again (it
 * does until it is answered): the order is paid once, with one payment and one ship_order.
 *
 * Where it is killed is made certain by the database: the test holds a lock the callback's
 * work must wait for, sees it waiting, kills the process, then lets go of the lock.
 *   - before commit: the order's row (PostgreSQL), or SQLite's write lock. PostgreSQL shows the
 *     wait in pg_stat_activity; on SQLite the write waits for the lock without holding the
 *     event loop, seen in /metrics (combo_sqlite_write_lock_waits_total). Nothing was committed.
 *   - after commit (PostgreSQL): the open provider payment's row, which the callback settles
 *     right after the payment's transaction committed and before it answers. The payment is
 *     committed; the provider never got its answer.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/index.js';
import { authorizationHeader } from '../../src/signing/signer.js';
import { AlipayStandIn, makeAlipayApp } from '../helpers/alipay.js';
import { createTestDatabase, lockWaiters, TEST_DB, type TestDatabase } from '../helpers/db.js';
import { spawnService, type ServiceProcess } from '../helpers/process.js';
import { WechatPayStandIn } from '../helpers/wechatpay.js';

const ADMIN = 'crash-admin-token-0123456789';
const PUBLIC = 'https://pay.example.com';
type Point = 'before_commit' | 'after_commit';
const POINTS: Point[] = TEST_DB === 'postgres' ? ['before_commit', 'after_commit'] : ['before_commit'];

let db: TestDatabase;
let store: Database;
let svc: ServiceProcess;
const wx = new WechatPayStandIn();
const alipay = new AlipayStandIn();
const app = makeAlipayApp();
const env: Record<string, string> = {};

beforeAll(async () => {
  db = await createTestDatabase();
  await wx.start();
  await alipay.start();
  alipay.addApp(app);
  wx.deliverTo = (u) => svc.url + new URL(u).pathname;
  Object.assign(env, {
    DATABASE_URL: db.url,
    ADMIN_TOKEN: ADMIN,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'combo-callback-crash-')),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    PUBLIC_BASE_URL: PUBLIC,
    WECHATPAY_BASE_URL: wx.url,
    ALIPAY_GATEWAY_URL: alipay.url,
    CLIENT_RATE_LIMIT_PER_SECOND: '1000000',
    MAX_INFLIGHT_PER_CLIENT_PERCENT: '100',
    MAX_EVENT_LOOP_DELAY_MS: '0',
    // No background writes of their own while the test holds the database: only the callback waits.
    SWEEP_INTERVAL_MS: '600000',
    NOTIFY_RETRY_BASE_MS: '3600000',
    RECONCILE_SCHEDULE: 'off',
  });
});
afterAll(async () => {
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  await store?.close();
  await wx.close();
  await alipay.close();
  await db?.drop();
});

async function call(method: string, p: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(svc.url + p, { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}
const asAdmin = (method: string, p: string, body: unknown) => call(method, p, body, { authorization: `Bearer ${ADMIN}` });

/** A lock on what the callback must write, held by the test until `release`. */
interface Held {
  /** Resolves once the service waits on it. */
  waited(): Promise<void>;
  release(): Promise<void>;
}

async function holdPg(lockSql: string, params: string[]): Promise<Held> {
  const holder = new pg.Client({ connectionString: db.url });
  await holder.connect();
  await holder.query('BEGIN');
  expect((await holder.query(lockSql, params)).rowCount).toBe(1);
  return {
    waited: () => lockWaiters(db.url, 'the callback to wait on the held lock'),
    async release() {
      await holder.query('ROLLBACK');
      await holder.end();
    },
  };
}

/** The service's count of write batches that found SQLite's write lock held and waited. */
async function writeLockWaits(): Promise<number> {
  const text = await (await fetch(`${svc.url}/metrics`)).text();
  return Number(/^combo_sqlite_write_lock_waits_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
}

async function holdSqlite(): Promise<Held> {
  const conn = new SQLite(db.url.slice('sqlite:'.length));
  conn.exec('BEGIN IMMEDIATE');
  const before = await writeLockWaits();
  return {
    async waited() {
      // The write waits for the lock (up to 5 s) without holding the event loop, and counts it.
      while ((await writeLockWaits()) === before) await new Promise((resolve) => setTimeout(resolve, 20));
    },
    async release() {
      conn.exec('ROLLBACK');
      conn.close();
    },
  };
}

function hold(point: Point, orderId: string, channel: string): Promise<Held> | Held {
  if (TEST_DB === 'sqlite') return holdSqlite();
  if (point === 'before_commit') return holdPg('SELECT 1 FROM orders WHERE order_id = $1 FOR UPDATE', [orderId]);
  return holdPg('SELECT 1 FROM provider_payments WHERE provider = $1 AND order_id = $2 FOR UPDATE', [channel, orderId]);
}

interface Channel {
  name: 'wechat' | 'alipay';
  /** The player pays the order at the provider; returns the provider's callback (sent each time it is called). */
  payAtProvider(orderId: string, action: any, gameId: string): () => Promise<boolean>;
}

const CHANNELS: Channel[] = [
  {
    name: 'wechat',
    payAtProvider: (orderId) => {
      const txn = wx.pay(orderId);
      return async () => (await wx.paymentCallback(txn)).status === 204;
    },
  },
  {
    name: 'alipay',
    payAtProvider: (_orderId, action, gameId) => {
      const trade = alipay.buy(action.url);
      return async () => (await alipay.notify(trade, {}, `${svc.url}/v1/callbacks/alipay/${gameId}`)).text === 'success';
    },
  },
];

describe(`crash safety of provider callbacks (${TEST_DB}): SIGKILL between a callback's arrival and its answer`, () => {
  it('the provider sends it again after the restart: one payment, one ship_order, for WeChat Pay and Alipay', async () => {
    svc = await spawnService(env);
    store = openDatabase(db.url);
    const gameId = `cbcrash${randomBytes(3).toString('hex')}`;
    const created = await asAdmin('POST', '/admin/v1/games', { game_id: gameId, name: 'Crash' });
    expect(created.status).toBe(201);
    const secret: string = created.body.secret_key;
    expect((await asAdmin('PUT', `/admin/v1/games/${gameId}/products/gem_60`, { name: 'gems', price: 600, currency: 'CNY' })).status).toBe(200);
    expect((await asAdmin('PUT', `/admin/v1/games/${gameId}/channels/wechat`, wx.settings())).status).toBe(200);
    const alipaySettings = { enabled: true, app_id: app.appId, app_private_key: app.privateKeyPem, alipay_public_key: alipay.publicKeyPem };
    expect((await asAdmin('PUT', `/admin/v1/games/${gameId}/channels/alipay`, alipaySettings)).status).toBe(200);

    for (const channel of CHANNELS) {
      for (const point of POINTS) {
        const body = { reference_id: `cbcrash-${randomBytes(8).toString('hex')}`, combo_id: 'p1', product_id: 'gem_60', platform: 'android', notify_url: 'http://127.0.0.1:9/notify' };
        const uri = '/v1/server/create-order';
        const order = await call('POST', uri, body, { authorization: authorizationHeader({ kind: 'game', id: gameId }, secret, 'POST', uri, JSON.stringify(body)) });
        expect(order.status).toBe(200);
        const orderId: string = order.body.order_id;
        const paid = await call('POST', '/v1/client/pay', { order_token: order.body.order_token, channel: channel.name });
        expect(paid.status).toBe(200);
        const sendCallback = channel.payAtProvider(orderId, paid.body.action, gameId);

        const held = await hold(point, orderId, channel.name);
        const first = sendCallback().catch(() => null);
        await held.waited();
        svc.child.kill('SIGKILL');
        await svc.exited;
        await held.release();
        // The provider got no answer: it sends the callback again.
        expect(await first).toBeNull();

        const payments = () => store.db.selectFrom('payments').select(['status', 'provider']).where('order_id', '=', orderId).execute();
        const row = await store.db.selectFrom('orders').select('status').where('order_id', '=', orderId).executeTakeFirstOrThrow();
        expect([channel.name, point, row.status]).toEqual([channel.name, point, point === 'before_commit' ? 'created' : 'paid']);
        expect(await payments()).toHaveLength(point === 'before_commit' ? 0 : 1);

        svc = await spawnService(env);
        expect(await sendCallback()).toBe(true);
        expect(await sendCallback()).toBe(true);
        expect(await payments()).toEqual([{ status: 'accepted', provider: channel.name }]);
        const shipOrders = await store.db.selectFrom('notifications').select('type').where('order_id', '=', orderId).execute();
        expect(shipOrders).toEqual([{ type: 'ship_order' }]);
        expect((await store.db.selectFrom('orders').select('status').where('order_id', '=', orderId).executeTakeFirstOrThrow()).status).toMatch(/^(paid|delivered)$/);
      }
    }
    expect(alipay.violations).toEqual([]);
  }, 300_000);
});
