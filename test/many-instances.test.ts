/**
 * Two real service processes on one database behave as one service (issue "Production",
 * point 1): they start together on a new database; parallel identical creates through both
 * give one order per reference_id; 48 payments split across both are each delivered to the
 * game exactly once; each notification is claimed by one dispatcher at a time. PostgreSQL is
 * the production case; SQLite runs it too (two processes on one file).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/index.js';
import { authorizationHeader } from '../src/signing/signer.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { spawnService, type ServiceProcess } from './helpers/process.js';
import { Receiver, until } from './helpers/receiver.js';

const ADMIN = 'instances-admin-token-0123456789';
let db: TestDatabase;
let a: ServiceProcess;
let b: ServiceProcess;
let receiver: Receiver;
const keys = new Map<string, string[]>();

beforeAll(async () => {
  db = await createTestDatabase();
  const env = {
    DATABASE_URL: db.url,
    ADMIN_TOKEN: ADMIN,
    SECRETS_KEY: randomBytes(32).toString('base64'),
    CLIENT_RATE_LIMIT_PER_SECOND: '1000000',
    // Every client here is 127.0.0.1: no per-client share of the in-flight places.
    MAX_INFLIGHT_PER_CLIENT_PERCENT: '100',
    NOTIFY_POLL_INTERVAL_MS: '50',
    LOG_LEVEL: 'info',
  };
  // Both start together on the new database (docs/deployment.md: one migrates while the other
  // waits for it).
  const start = (name: string, nodeId: string) => spawnService({ ...env, NODE_ID: nodeId, DATA_DIR: mkdtempSync(path.join(os.tmpdir(), `combo-${name}-`)) });
  [a, b] = await Promise.all([start('a', '1'), start('b', '2')]);
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
}, 120_000);

afterAll(async () => {
  for (const p of [a, b]) {
    p?.child.kill('SIGTERM');
    await p?.exited;
  }
  await receiver?.close();
  await db?.drop();
});

async function call(base: string, method: string, p: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + p, { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
}

describe('two service processes on one database', () => {
  it('one order per reference_id, and every payment delivered exactly once', async () => {
    const gameId = `multi${randomBytes(3).toString('hex')}`;
    const g = await call(a.url, 'POST', '/admin/v1/games', { game_id: gameId, name: 'Multi', sandbox_payments: true }, { authorization: `Bearer ${ADMIN}` });
    expect(g.status).toBe(201);
    keys.set(gameId, [g.body.secret_key]);
    expect((await call(b.url, 'PUT', `/admin/v1/games/${gameId}/products/gem_60`, { name: 'gems', price: 600, currency: 'CNY' }, { authorization: `Bearer ${ADMIN}` })).status).toBe(200);

    // 48 references, each sent 4 times at once, alternating between the two processes.
    const refs = Array.from({ length: 48 }, (_, i) => `multi-${randomBytes(4).toString('hex')}-${i}`);
    const create = (base: string, ref: string) => {
      const body = { reference_id: ref, combo_id: 'p1', product_id: 'gem_60', platform: 'ios', notify_url: `${receiver.url}/notify` };
      const auth = authorizationHeader({ kind: 'game', id: gameId }, g.body.secret_key, 'POST', '/v1/server/create-order', JSON.stringify(body));
      return call(base, 'POST', '/v1/server/create-order', body, { authorization: auth });
    };
    const answers = await Promise.all(refs.flatMap((ref) => [create(a.url, ref), create(b.url, ref), create(a.url, ref), create(b.url, ref)]));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    const byRef = new Map<string, Set<string>>();
    answers.forEach((r, i) => byRef.set(refs[Math.floor(i / 4)]!, (byRef.get(refs[Math.floor(i / 4)]!) ?? new Set()).add(r.body.order_id)));
    for (const ids of byRef.values()) expect(ids.size).toBe(1);

    // Pay every order, half through each process.
    const orders = refs.map((_, i) => answers[i * 4]!.body as { order_id: string; order_token: string });
    const paid = await Promise.all(orders.map((o, i) => call(i % 2 ? a.url : b.url, 'POST', '/v1/client/pay', { order_token: o.order_token, channel: 'sandbox' })));
    expect(paid.every((p) => p.status === 200 && p.body.status !== 'created')).toBe(true);

    // Every ship_order arrives once: both dispatchers run, neither sends one twice.
    await until('48 notifications delivered', () => (receiver.on('/notify').length >= 48 ? true : null), 60_000);
    const store = openDatabase(db.url);
    try {
      await until('every order delivered', async () => {
        const rows = await store.db.selectFrom('orders').select('status').where('game_id', '=', gameId).execute();
        return rows.length === 48 && rows.every((r) => r.status === 'delivered') ? true : null;
      }, 60_000);
      const counts = await store.db.selectFrom('orders').select((eb) => eb.fn.countAll<number>().as('n')).where('game_id', '=', gameId).executeTakeFirstOrThrow();
      expect(Number(counts.n)).toBe(48);
    } finally {
      await store.close();
    }
    const got = receiver.on('/notify');
    expect(got.every((r) => r.signatureProblem === null)).toBe(true);
    const ids = got.map((r) => r.body.notification_id as string);
    expect(new Set(ids).size).toBe(48);
    expect(ids).toHaveLength(48);
    expect(new Set(got.map((r) => r.body.data.order_id))).toEqual(new Set(orders.map((o) => o.order_id)));
  }, 180_000);
});
