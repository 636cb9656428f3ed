/**
 * Crash safety of Google Play purchases (issue 42, "How it is tested"): the real service
 * process is killed with SIGKILL while it waits on Google, once before the payment commits
 * (asking Google about the purchase) and once after it (consuming the purchase), alternately;
 * it is restarted on the same database and the client submits the purchase again, as it does
 * at its next start. Each order ends paid exactly once and every purchase consumed.
 * CRASH_ROUNDS (default 3) sets how many kills.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/index.js';
import { authorizationHeader } from '../../src/signing/signer.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { startGooglePlay, type GooglePlayStandIn } from '../helpers/google-play.js';
import { spawnService, type ServiceProcess } from '../helpers/process.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3);
const ADMIN = 'crash-admin-token-0123456789';
const PKG = 'com.example.crash';
const SKU = 'gems_60';

let db: TestDatabase;
let g: GooglePlayStandIn;
let store: Database;
const env: Record<string, string> = {};

beforeAll(async () => {
  db = await createTestDatabase();
  g = await startGooglePlay();
  Object.assign(env, {
    DATABASE_URL: db.url,
    ADMIN_TOKEN: ADMIN,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'combo-google-crash-')),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    CLIENT_RATE_LIMIT_PER_SECOND: '1000000',
    // Every client here is 127.0.0.1: no per-client share of the in-flight places.
    MAX_INFLIGHT_PER_CLIENT_PERCENT: '100',
    // A process just started (compiling as it goes) on a busy machine is not overloaded.
    MAX_EVENT_LOOP_DELAY_MS: '0',
    GOOGLE_API_BASE_URL: g.url,
    GOOGLE_PUSH_JWKS_URL: g.jwksUrl,
  });
});
afterAll(async () => {
  await store?.close();
  await g?.close();
  await db?.drop();
});

async function call(url: string, method: string, p: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url + p, { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

const asAdmin = (svc: ServiceProcess, method: string, p: string, body: unknown) => call(svc.url, method, p, body, { authorization: `Bearer ${ADMIN}` });

describe(`crash safety of Google purchases: SIGKILL ${ROUNDS} times while waiting on Google`, () => {
  it('each order is paid exactly once and every purchase is consumed', async () => {
    let svc = await spawnService(env);
    const gameId = `gcrash${randomBytes(3).toString('hex')}`;
    const created = await asAdmin(svc, 'POST', '/admin/v1/games', { game_id: gameId, name: 'Crash' });
    expect(created.status).toBe(201);
    const secret: string = created.body.secret_key;
    expect((await asAdmin(svc, 'PUT', `/admin/v1/games/${gameId}/products/gem_60`, { name: 'gems', price: 600, currency: 'CNY', store_product_ids: { google: SKU } })).status).toBe(200);
    expect((await asAdmin(svc, 'PUT', `/admin/v1/games/${gameId}/channels/google`, { enabled: true, package_name: PKG, service_account: g.serviceAccount })).status).toBe(200);
    store = openDatabase(db.url);

    const purchases: { orderId: string; token: string }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      // Even rounds: killed while asking Google (nothing committed); odd: while consuming (paid).
      const killAt = round % 2 === 0 ? /\/tokens\/[^/:]+$/ : /:consume$/;
      const body = { reference_id: `gcrash-${randomBytes(8).toString('hex')}`, combo_id: 'p1', product_id: 'gem_60', platform: 'android', notify_url: 'http://127.0.0.1:9/notify' };
      const uri = '/v1/server/create-order';
      const order = await call(svc.url, 'POST', uri, body, { authorization: authorizationHeader({ kind: 'game', id: gameId }, secret, 'POST', uri, JSON.stringify(body)) });
      expect(order.status).toBe(200);
      const token = `tok.${randomBytes(16).toString('hex')}`;
      g.setPurchase(PKG, SKU, token, { purchaseState: 0, consumptionState: 0, acknowledgementState: 0, orderId: `GPA.${randomBytes(6).toString('hex')}`, obfuscatedExternalAccountId: order.body.order_id, quantity: 1 });
      purchases.push({ orderId: order.body.order_id, token });

      let release = () => {};
      const reached = new Promise<void>((resolve) => {
        g.beforeAnswer = (c) => {
          if (!c.path.includes(token) || !killAt.test(c.path)) return Promise.resolve();
          resolve();
          return new Promise<'drop'>((r) => (release = () => r('drop')));
        };
      });
      const submitted = call(svc.url, 'POST', '/v1/client/google/purchases', { purchase_token: token, product_id: SKU, order_token: order.body.order_token }).catch(() => null);
      await reached;
      svc.child.kill('SIGKILL');
      await svc.exited;
      g.beforeAnswer = null;
      release();
      expect(await submitted).toBeNull();

      const row = await store.db.selectFrom('orders').select('status').where('order_id', '=', order.body.order_id).executeTakeFirstOrThrow();
      expect(row.status).toBe(round % 2 === 0 ? 'created' : 'paid');
      if (round % 2 === 1) expect(g.purchase(PKG, SKU, token)!.consumptionState).toBe(0);

      // The client submits the purchase again at its next start.
      svc = await spawnService(env);
      const again = await call(svc.url, 'POST', '/v1/client/google/purchases', { purchase_token: token, product_id: SKU });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ order_id: order.body.order_id, status: 'paid' });
    }

    for (const p of purchases) {
      const pays = await store.db.selectFrom('payments').select(['status', 'provider_txn_id']).where('order_id', '=', p.orderId).execute();
      expect(pays).toEqual([{ status: 'accepted', provider_txn_id: g.purchase(PKG, SKU, p.token)!.orderId }]);
      expect(g.purchase(PKG, SKU, p.token)!.consumptionState).toBe(1);
      const consumes = g.calls.filter((c) => c.path.endsWith(`/tokens/${p.token}:consume`) && c.authorized).length;
      expect(consumes).toBeGreaterThanOrEqual(1);
    }
    svc.child.kill('SIGTERM');
    await svc.exited;
  }, 300_000);
});
