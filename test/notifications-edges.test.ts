import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { NotificationStore } from '../src/notifications/store.js';
import { Receiver, ok, status, until } from './helpers/receiver.js';
import { attemptRows, notificationRow, paidOrder } from './helpers/paid-orders.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * Edges of notification delivery and of the operator API (docs/notifications.md, PROTOCOL 5)
 * that the broader suites leave open: boundaries of the status classes, of `since`, of the
 * listing's default page, and which times and fields the records carry.
 */
const TIMEOUT_MS = 500;
const keys = new Map<string, string[]>();
let receiver: Receiver;
let t: TestService;

beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
  t = await startService({
    env: {
      NOTIFY_TIMEOUT_MS: String(TIMEOUT_MS),
      NOTIFY_RETRY_BASE_MS: '40',
      NOTIFY_POLL_INTERVAL_MS: '50',
      // One hour: a notification written two hours ago fails at its first failed attempt.
      NOTIFY_MAX_AGE_SECONDS: '3600',
    },
  });
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

let paths = 0;
const newPath = () => `/edges/${++paths}`;

async function game(s: TestService = t): Promise<TestGame> {
  const g = await createGame(s);
  keys.set(g.gameId, [g.secret]);
  return g;
}

const settled = (id: string, s: TestService = t) =>
  until(`notification ${id} to settle`, async () => {
    const r = await notificationRow(s, id);
    return r.status !== 'pending' ? r : null;
  });

describe('what an attempt decides', () => {
  // docs/notifications.md: an answer not whole within NOTIFY_TIMEOUT_MS is a failed attempt
  // "whatever its status (a 2xx does not deliver the order, a 410 does not stop retries)".
  it('a 410 whose body stalls past the time-out is a failed attempt: retried, not gone', async () => {
    // A receiver of its own: the stalled answer marks its host slow, which must not slow the others.
    const stalling = await new Receiver({ keys, now: () => Date.now() }).start();
    try {
      const g = await game();
      const path = newPath();
      stalling.sequence(path, { kind: 'stall', status: 410, body: '{"error":' }, ok());
      const { notificationId } = await paidOrder(t, g, stalling.url + path);
      const error = `HTTP 410, then reading the answer body: timed out after ${TIMEOUT_MS} ms`;
      // Not gone: retried, and the second answer (200) delivers it.
      const row = await settled(notificationId);
      expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
      const attempts = await attemptRows(t, notificationId);
      expect(attempts.map((a) => [a.status_code, a.error])).toEqual([
        [410, error],
        [200, null],
      ]);
      expect(stalling.on(path)).toHaveLength(2);
    } finally {
      await stalling.close();
    }
  });

  // PROTOCOL 5 / docs: success is any 2xx; 3xx (never followed) is a failed attempt.
  it('a 300 answer is a failed attempt (only 200..299 deliver); the retry that gets 200 delivers', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, status(300), ok());
    const { order, notificationId } = await paidOrder(t, g, receiver.url + path);
    const row = await settled(notificationId);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
    expect((await attemptRows(t, notificationId)).map((a) => [a.status_code, a.error])).toEqual([
      [300, 'HTTP 300'],
      [200, null],
    ]);
    expect(receiver.on(path).map((r) => r.answered)).toEqual(['300', '200']);
    const o = await t.service.database.db.selectFrom('orders').select('status').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('delivered');
  });
});

describe('operator API edges', () => {
  // docs/notifications.md: "every failed notification of the game created at or after since".
  it('redelivering a game\'s failed notifications takes one created exactly at `since`, and not one a millisecond before', async () => {
    const g = await game();
    const path = newPath();
    let open = false;
    receiver.script(path, () => (open ? ok() : status(500)));
    // Written two hours ago with a one-hour window: the first failed attempt fails it for good.
    const at = Date.now() - 2 * 3_600_000;
    const before = await paidOrder(t, g, receiver.url + path, { now: at - 1 });
    const exact = await paidOrder(t, g, receiver.url + path, { now: at });
    expect(await settled(before.notificationId)).toMatchObject({ status: 'failed', attempts: 1 });
    const row = await settled(exact.notificationId);
    expect(row).toMatchObject({ status: 'failed', attempts: 1, created_at: at });

    open = true;
    const r = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/notifications/redeliver`, { since: row.created_at });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ count: 1 });
    expect((await notificationRow(t, before.notificationId)).status).toBe('failed');
    // Redelivered with a fresh window (from now): it goes out and is delivered.
    expect(await settled(exact.notificationId)).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  // docs: a redelivered notification "becomes pending, due now" — not delivered (any more).
  it('redelivering a succeeded notification answers it pending with delivered_at null', async () => {
    const g = await game();
    const path = newPath();
    // The redelivered attempt never answers (until the time-out): nothing can deliver it again
    // before the answer is read.
    receiver.sequence(path, ok(), { kind: 'hang' });
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    const done = await settled(notificationId);
    expect(done.status).toBe('succeeded');
    expect(done.delivered_at).toBeGreaterThan(0);

    const r = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ notification_id: notificationId, status: 'pending', attempt_count: 0, delivered_at: null });
    const shown = await admin(t, 'GET', `/admin/v1/notifications/${notificationId}`);
    expect(shown.body.delivered_at).toBeNull();
  });

  // docs/notifications.md: "limit 1..200 (default 50)".
  it('lists 50 notifications when no limit is given, with a cursor to the rest', async () => {
    const g = await game();
    // Held by a "crashed" dispatcher's lease for an hour: listed, never attempted meanwhile.
    const lockedUntil = Date.now() + 3_600_000;
    const made: string[] = [];
    for (let i = 0; i < 51; i++) made.push((await paidOrder(t, g, receiver.url + newPath(), { lockedUntil })).notificationId);
    const p1 = await admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}`);
    expect(p1.status).toBe(200);
    expect(p1.body.data).toHaveLength(50);
    expect(typeof p1.body.next_cursor).toBe('string');
    const p2 = await admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}&cursor=${encodeURIComponent(p1.body.next_cursor)}`);
    expect(p2.body.data).toHaveLength(1);
    expect(p2.body.next_cursor).toBeNull();
    expect(new Set([...p1.body.data, ...p2.body.data].map((n: any) => n.notification_id))).toEqual(new Set(made));
  });
});

describe('attempt records on a manual clock', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 23, 8, 0, 0));
  let m: TestService;
  let there: Receiver;
  beforeAll(async () => {
    there = await new Receiver({ keys, now: () => clock.now() }).start();
    m = await startService({ clock, env: { NOTIFY_POLL_INTERVAL_MS: '50' } });
  });
  afterAll(async () => {
    await m?.stop();
    await there?.close();
  });

  // Schema of notification_attempts.at: "Unix ms when the attempt started".
  it('records an attempt at the time it started, not the time its answer came', async () => {
    const g = await game(m);
    const path = newPath();
    const started = clock.now();
    // The game takes 7 s (of the service's clock) to answer.
    there.script(path, () => {
      clock.advance(7_000);
      return ok();
    });
    const { notificationId } = await paidOrder(m, g, there.url + path);
    const row = await settled(notificationId, m);
    expect(row).toMatchObject({ status: 'succeeded', delivered_at: started + 7_000 });
    const attempts = await attemptRows(m, notificationId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.at).toBe(started);
    const shown = await admin(m, 'GET', `/admin/v1/notifications/${notificationId}`);
    expect(shown.body.attempts.map((a: any) => a.at)).toEqual([started]);
  });
});

describe('claiming order (the store on a real database)', () => {
  // store.ts dueIds: "Due notifications, oldest due first".
  it('claims the notification due longest first', async () => {
    const s = await startService();
    try {
      const g = await createGame(s);
      // Due in a week (the service's own dispatcher leaves them be); the later-due one written first.
      const later = Date.now() + 7 * 86_400_000;
      const newer = await paidOrder(s, g, receiver.url + newPath(), { now: later + 1_000 });
      const older = await paidOrder(s, g, receiver.url + newPath(), { now: later });
      const db = s.service.database;
      const store = new NotificationStore(db);
      const first = await store.claimDue(later + 1_000, 1, later + 60_000, 'claim-1');
      expect(first.map((n) => n.notification_id)).toEqual([older.notificationId]);
      const second = await store.claimDue(later + 1_000, 1, later + 60_000, 'claim-2');
      expect(second.map((n) => n.notification_id)).toEqual([newer.notificationId]);
    } finally {
      await s.stop();
    }
  });
});
