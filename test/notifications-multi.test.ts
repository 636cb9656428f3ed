import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver, until } from './helpers/receiver.js';
import { attemptRows, notificationRow, paidOrder } from './helpers/paid-orders.js';
import { createGame, startService, type TestGame, type TestService } from './helpers/service.js';

const keys = new Map<string, string[]>();
let receiver: Receiver;
beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
});
afterAll(async () => receiver?.close());

async function game(t: TestService): Promise<TestGame> {
  const g = await createGame(t);
  keys.set(g.gameId, [g.secret]);
  return g;
}

const allSettled = (t: TestService, ids: string[]) =>
  until(
    `${ids.length} notifications to succeed`,
    async () => {
      for (const id of ids) if ((await notificationRow(t, id)).status !== 'succeeded') return false;
      return true;
    },
    30_000,
  );

describe('two service instances on one database', () => {
  let a: TestService;
  let b: TestService;
  beforeAll(async () => {
    const env = { NOTIFY_POLL_INTERVAL_MS: '20', NOTIFY_CONCURRENCY: '8' };
    const secretsKey = randomBytes(32);
    a = await startService({ env, secretsKey });
    b = await startService({ env, secretsKey, db: a.db });
  });
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('never deliver one notification twice when all succeed', async () => {
    const g = await game(a);
    const path = '/multi';
    receiver.script(path, () => ({ kind: 'status', status: 200, body: 'ok', delayMs: 5 }));
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) {
      const { notificationId } = await paidOrder(i % 2 ? a : b, g, receiver.url + path);
      ids.push(notificationId);
      a.service.dispatcher.kick();
      b.service.dispatcher.kick();
    }
    await allSettled(a, ids);
    const got = receiver.on(path);
    expect(got.every((r) => r.signatureProblem === null)).toBe(true);
    const perId = new Map<string, number>();
    for (const r of got) perId.set(r.body.notification_id, (perId.get(r.body.notification_id) ?? 0) + 1);
    expect(perId.size).toBe(60);
    expect([...perId.values()].every((n) => n === 1)).toBe(true);
    for (const id of ids) expect((await attemptRows(a, id)).length).toBe(1);
    const delivered = await a.service.database.db
      .selectFrom('order_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .innerJoin('orders', 'orders.order_id', 'order_events.order_id')
      .where('orders.game_id', '=', g.gameId)
      .where('to_status', '=', 'delivered')
      .executeTakeFirstOrThrow();
    expect(Number(delivered.n)).toBe(60);
  });
});

describe('concurrency caps', () => {
  it('keeps at most NOTIFY_PER_HOST_CONCURRENCY requests open to one host', async () => {
    const t = await startService({ env: { NOTIFY_PER_HOST_CONCURRENCY: '2', NOTIFY_POLL_INTERVAL_MS: '20' } });
    try {
      const g = await game(t);
      const path = '/per-host';
      receiver.maxInflight = 0;
      receiver.script(path, () => ({ kind: 'status', status: 200, delayMs: 30 }));
      const ids = [];
      for (let i = 0; i < 10; i++) ids.push((await paidOrder(t, g, receiver.url + path)).notificationId);
      await allSettled(t, ids);
      expect(receiver.maxInflight).toBeGreaterThanOrEqual(1);
      expect(receiver.maxInflight).toBeLessThanOrEqual(2);
    } finally {
      await t.stop();
    }
  });

  // A slow host may hold its per-host cap of requests and as many claims queued behind them,
  // never the whole of NOTIFY_CONCURRENCY: other hosts' notifications go out meanwhile.
  it('a host that never answers, with a backlog, does not hold back another host\'s notifications', async () => {
    const t = await startService({ env: { NOTIFY_CONCURRENCY: '8', NOTIFY_PER_HOST_CONCURRENCY: '2', NOTIFY_TIMEOUT_MS: '60000', NOTIFY_POLL_INTERVAL_MS: '20' } });
    const slow = await new Receiver({ keys, now: () => Date.now() }).start();
    const fast = await new Receiver({ keys, now: () => Date.now() }).start();
    try {
      const g = await game(t);
      slow.script('/backlog', () => ({ kind: 'hang' }));
      for (let i = 0; i < 30; i++) await paidOrder(t, g, slow.url + '/backlog');
      await until('the slow host to hold its two requests', () => slow.received.length >= 2);
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await paidOrder(t, g, fast.url + '/fast')).notificationId);
      await allSettled(t, ids); // before: not until the slow host's 60 s time-out
      expect(slow.received.length).toBe(2);
    } finally {
      await slow.close(); // ends the hanging requests: the service can stop
      await t.stop();
      await fast.close();
    }
  });

  // Hosts that hang hold a slot for the whole time-out per attempt: once found slow, each gets
  // one attempt in flight, and all of them together half of NOTIFY_CONCURRENCY.
  it('hosts that hang get one attempt in flight each, and half the slots between them', async () => {
    const t = await startService({
      env: { NOTIFY_CONCURRENCY: '4', NOTIFY_PER_HOST_CONCURRENCY: '4', NOTIFY_TIMEOUT_MS: '300', NOTIFY_RETRY_BASE_MS: '20', NOTIFY_POLL_INTERVAL_MS: '20' },
    });
    const hanging = await Promise.all([1, 2, 3, 4].map(() => new Receiver({ keys, now: () => Date.now() }).start()));
    try {
      const g = await game(t);
      const ids = new Map<string, Receiver>();
      for (const r of hanging) {
        r.script('/hang', () => ({ kind: 'hang' }));
        for (let i = 0; i < 3; i++) ids.set((await paidOrder(t, g, r.url + '/hang')).notificationId, r);
      }
      const attempts = async () => (await Promise.all([...ids.keys()].map(async (id) => (await attemptRows(t, id)).map((a) => ({ ...a, host: ids.get(id)! }))))).flat();
      // The attempts made once every hanging host had been found slow (its first attempt over).
      const afterFoundSlow = async () => {
        const all = await attempts();
        if (!hanging.every((r) => all.some((a) => a.host === r))) return [];
        const from = Math.max(...hanging.map((r) => Math.min(...all.filter((a) => a.host === r).map((a) => a.at + (a.latency_ms ?? 0)))));
        return all.filter((a) => a.at >= from);
      };
      await until('a dozen attempts to hanging hosts found slow', async () => (await afterFoundSlow()).length >= 12, 30_000);
      // Another host's notifications still go out meanwhile.
      const fast = [];
      for (let i = 0; i < 3; i++) fast.push((await paidOrder(t, g, receiver.url + '/beside-hanging')).notificationId);
      await allSettled(t, fast);
      const later = await afterFoundSlow();
      // Times are whole ms (Date.now() truncated, latencies rounded): 2 ms of slack at each end.
      const overlapAt = (x: number, of: typeof later) => of.filter((a) => a.at <= x && x < a.at + (a.latency_ms ?? 0) - 2).length;
      for (const a of later) {
        const same = later.filter((b) => b.host === a.host);
        expect(overlapAt(a.at, same), `one per slow host: ${JSON.stringify(same.map((b) => [b.at, b.latency_ms]))}`).toBeLessThanOrEqual(1);
        expect(overlapAt(a.at, later), 'half the slots for slow hosts').toBeLessThanOrEqual(2);
      }
    } finally {
      for (const r of hanging) await r.close();
      await t.stop();
    }
  });

  // A claim may take more of one host's rows than its queue holds: those go back due at once
  // and are claimed again when the queue has room, not at the next poll (a minute here).
  it('a host whose queue overflows gets every notification delivered without waiting for a poll', async () => {
    const env = { NOTIFY_CONCURRENCY: '8', NOTIFY_PER_HOST_CONCURRENCY: '1', NOTIFY_PER_HOST_CONCURRENCY_MIN: '1', NOTIFY_POLL_INTERVAL_MS: '60000' };
    const t = await startService({ env });
    try {
      const g = await game(t);
      const path = '/overflow';
      receiver.script(path, () => ({ kind: 'status', status: 200, delayMs: 20 }));
      const ids = [];
      for (let i = 0; i < 24; i++) ids.push((await paidOrder(t, g, receiver.url + path)).notificationId);
      await allSettled(t, ids);
      for (const id of ids) expect(await attemptRows(t, id)).toHaveLength(1);
    } finally {
      await t.stop();
    }
  });

  it('keeps at most NOTIFY_CONCURRENCY requests open in total', async () => {
    const t = await startService({ env: { NOTIFY_CONCURRENCY: '3', NOTIFY_POLL_INTERVAL_MS: '20' } });
    try {
      const g = await game(t);
      const path = '/total';
      receiver.maxInflight = 0;
      receiver.script(path, () => ({ kind: 'status', status: 200, delayMs: 30 }));
      const ids = [];
      for (let i = 0; i < 12; i++) ids.push((await paidOrder(t, g, receiver.url + path)).notificationId);
      await allSettled(t, ids);
      expect(receiver.maxInflight).toBeGreaterThanOrEqual(1);
      expect(receiver.maxInflight).toBeLessThanOrEqual(3);
    } finally {
      await t.stop();
    }
  });
});
