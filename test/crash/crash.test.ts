/**
 * Crash safety (issues "Orders that get paid..." point 6 and "Prove it" point 1): the real
 * service process is killed with SIGKILL at random moments while create-order and sandbox
 * payments are loaded and notifications are pending and failing; it is restarted on the same
 * database each time. Afterwards:
 *   - every create-order answered 200 exists, with the order id that was answered;
 *   - no reference_id has two orders;
 *   - every pay answered "paid" left the order paid (or delivered);
 *   - every paid order's ship_order reaches the receiver (signature verified), and
 *   - nothing is delivered for an order that was not paid.
 * CRASH_ROUNDS (default 3) sets how many kills; `npm run test:crash` runs more.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/index.js';
import { authorizationHeader } from '../../src/signing/signer.js';
import { CAP_EXPONENT, nominalDelay } from '../../src/notifications/backoff.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { spawnService, type ServiceProcess } from '../helpers/process.js';
import { Receiver, ok, status } from '../helpers/receiver.js';

const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 3);
const ADMIN = 'crash-admin-token-0123456789';

let db: TestDatabase;
let receiver: Receiver;
let healthy = false;
const env: Record<string, string> = {};
/**
 * Notifications fail from the first round to the last, so by the end some wait the longest
 * retry delay of the schedule, base × 3^7 (~44 s here): the final wait for delivery allows it.
 */
const RETRY_BASE_MS = 20;
const LONGEST_RETRY_MS = nominalDelay(CAP_EXPONENT + 1, RETRY_BASE_MS);

beforeAll(async () => {
  db = await createTestDatabase();
  Object.assign(env, {
    DATABASE_URL: db.url,
    ADMIN_TOKEN: ADMIN,
    DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'combo-crash-')),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    NOTIFY_RETRY_BASE_MS: String(RETRY_BASE_MS),
    NOTIFY_POLL_INTERVAL_MS: '50',
    NOTIFY_TIMEOUT_MS: '2000',
    CLIENT_RATE_LIMIT_PER_SECOND: '1000000',
    // Every client here is 127.0.0.1: no per-client share of the in-flight places.
    MAX_INFLIGHT_PER_CLIENT_PERCENT: '100',
  });
});
afterAll(async () => {
  await receiver?.close();
  await db?.drop();
});

interface Ledger {
  created: Map<string, string>; // reference_id -> order_id answered with 200
  tokens: Map<string, string>; // order_id -> order_token
  paid: Set<string>; // order ids whose pay answered "paid"
}

async function call(url: string, method: string, p: string, body: unknown, headers: Record<string, string>) {
  const raw = JSON.stringify(body);
  const res = await fetch(url + p, { method, headers: { 'content-type': 'application/json', ...headers }, body: raw });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

/** Create orders (some references repeated) and pay about half, until the process dies. */
async function load(svc: ServiceProcess, gameId: string, secret: string, ledger: Ledger, stop: { dead: boolean }) {
  const worker = async () => {
    while (!stop.dead) {
      const repeat = ledger.created.size > 0 && Math.random() < 0.2;
      const ref = repeat ? [...ledger.created.keys()][Math.floor(Math.random() * ledger.created.size)]! : `crash-${randomBytes(8).toString('hex')}`;
      const body = { reference_id: ref, combo_id: 'p1', product_id: 'gem_60', platform: 'android', notify_url: `${receiver.url}/notify` };
      const uri = '/v1/server/create-order';
      try {
        const auth = authorizationHeader({ kind: 'game', id: gameId }, secret, 'POST', uri, JSON.stringify(body));
        const r = await call(svc.url, 'POST', uri, body, { authorization: auth });
        if (r.status !== 200) continue;
        const known = ledger.created.get(ref);
        if (known && known !== r.body.order_id) throw new Error(`reference ${ref} answered two order ids`);
        ledger.created.set(ref, r.body.order_id);
        ledger.tokens.set(r.body.order_id, r.body.order_token);
        if (Math.random() < 0.5) {
          const p = await call(svc.url, 'POST', '/v1/client/pay', { order_token: r.body.order_token, channel: 'sandbox' }, {});
          if (p.status === 200 && p.body.status !== 'created') ledger.paid.add(r.body.order_id);
        }
      } catch (e) {
        if (!stop.dead && !/fetch failed|ECONNRESET|ECONNREFUSED|other side closed/.test(String((e as Error).message) + String((e as Error).cause))) throw e;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
}

describe(`crash safety: SIGKILL ${ROUNDS} times under load`, () => {
  it('loses no acknowledged order, payment or notification', async () => {
    const keys = new Map<string, string[]>();
    receiver = await new Receiver({ keys, now: () => Date.now() }).start();
    // Failing until the end: notifications are pending and failing at every kill.
    receiver.script('/notify', () => (healthy ? ok() : status(500, 'not now')));

    let svc = await spawnService(env);
    const gameId = `crash${randomBytes(3).toString('hex')}`;
    const g = await call(svc.url, 'POST', '/admin/v1/games', { game_id: gameId, name: 'Crash', sandbox_payments: true }, { authorization: `Bearer ${ADMIN}` });
    expect(g.status).toBe(201);
    const secret: string = g.body.secret_key;
    keys.set(gameId, [secret]);
    const pr = await call(svc.url, 'PUT', `/admin/v1/games/${gameId}/products/gem_60`, { name: 'gems', price: 600, currency: 'CNY' }, { authorization: `Bearer ${ADMIN}` });
    expect(pr.status).toBe(200);

    const ledger: Ledger = { created: new Map(), tokens: new Map(), paid: new Set() };
    for (let round = 0; round < ROUNDS; round++) {
      if (round > 0) svc = await spawnService(env);
      const stop = { dead: false };
      const running = load(svc, gameId, secret, ledger, stop);
      // Kill at a random moment once some work has been acknowledged in this round.
      const target = ledger.created.size + 20 + Math.floor(Math.random() * 60);
      const deadline = Date.now() + 20_000;
      while (ledger.created.size < target && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 50)));
      svc.child.kill('SIGKILL');
      stop.dead = true;
      await svc.exited;
      await running;
    }
    expect(ledger.created.size).toBeGreaterThan(20 * ROUNDS);

    // Restart once more with a healthy receiver: everything pending must now be delivered.
    healthy = true;
    svc = await spawnService(env);
    const store: Database = openDatabase(db.url);
    try {
      const deadline = Date.now() + LONGEST_RETRY_MS + 30_000;
      for (;;) {
        const pending = await store.db
          .selectFrom('notifications')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('game_id', '=', gameId)
          .where('status', '=', 'pending')
          .executeTakeFirstOrThrow();
        if (Number(pending.n) === 0) break;
        if (Date.now() > deadline) throw new Error(`${pending.n} notifications still pending`);
        await new Promise((r) => setTimeout(r, 100));
      }

      const orders = await store.db.selectFrom('orders').select(['order_id', 'reference_id', 'status']).where('game_id', '=', gameId).execute();
      const byRef = new Map<string, string[]>();
      for (const o of orders) byRef.set(o.reference_id, [...(byRef.get(o.reference_id) ?? []), o.order_id]);
      // Every acknowledged create-order exists, with the answered id; one order per reference.
      for (const [ref, id] of ledger.created) expect(byRef.get(ref), `reference ${ref}`).toEqual([id]);
      for (const [ref, ids] of byRef) expect(ids.length, `reference ${ref}`).toBe(1);

      const status = new Map(orders.map((o) => [o.order_id, o.status]));
      // Every acknowledged payment left the order paid; with a healthy receiver, delivered.
      for (const id of ledger.paid) expect(status.get(id), `order ${id}`).toBe('delivered');

      const paidInDb = orders.filter((o) => o.status === 'paid' || o.status === 'delivered').map((o) => o.order_id);
      const delivered = new Set(
        receiver
          .on('/notify')
          .filter((r) => r.signatureProblem === null && r.answered.startsWith('200') && r.body?.notification_type === 'ship_order')
          .map((r) => r.body.data.order_id as string),
      );
      // Every paid order's ship_order reached the game, signed.
      for (const id of paidInDb) expect(delivered.has(id), `ship_order of paid order ${id}`).toBe(true);
      // Nothing was delivered for an order that was not paid.
      for (const id of delivered) expect(['paid', 'delivered']).toContain(status.get(id));
      expect(receiver.on('/notify').every((r) => r.signatureProblem === null)).toBe(true);
      const ships = await store.db.selectFrom('notifications').select(['order_id']).where('game_id', '=', gameId).where('type', '=', 'ship_order').execute();
      expect(new Set(ships.map((s) => s.order_id))).toEqual(new Set(paidInDb));
    } finally {
      await store.close();
      svc.child.kill('SIGTERM');
      await svc.exited;
    }
  }, 300_000);
});
