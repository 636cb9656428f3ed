import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { Receiver, ok, status, until } from './helpers/receiver.js';
import { attemptRows, notificationRow, paidOrder } from './helpers/paid-orders.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * The retry schedule and window, driven by a ManualClock: the test moves time to each
 * next_attempt_at and kicks the dispatcher, so hours of backoff take milliseconds.
 * Default base (10 s), window 1 h.
 */
const BASE = 10_000;
const WINDOW = 3_600_000;
const clock = new ManualClock(Date.UTC(2026, 10, 23, 8, 0, 0));
const keys = new Map<string, string[]>();
let receiver: Receiver;
let t: TestService;

beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => clock.now() }).start();
  t = await startService({ clock, env: { NOTIFY_MAX_AGE_SECONDS: String(WINDOW / 1000), NOTIFY_POLL_INTERVAL_MS: '50' } });
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

let paths = 0;
const newPath = () => `/sched/${++paths}`;

async function game(): Promise<TestGame> {
  const g = await createGame(t);
  keys.set(g.gameId, [g.secret]);
  return g;
}

/** Waits for attempt number `n` to be recorded; returns the notification's state after it. */
async function afterAttempt(id: string, n: number) {
  t.service.dispatcher.kick();
  return until(`attempt ${n} of ${id}`, async () => {
    const r = await notificationRow(t, id);
    return r.attempts >= n && r.locked_by === null ? r : null;
  });
}

/** Moves time to each retry until the notification is no longer pending; checks each delay. */
async function driveToEnd(id: string, firstAttempt = 1): Promise<number> {
  for (let n = firstAttempt; ; n++) {
    const row = await afterAttempt(id, n);
    if (row.status !== 'pending') return n;
    const nominal = BASE * 3 ** Math.min(n - 1, 7);
    const delay = row.next_attempt_at - clock.now();
    expect(delay).toBeGreaterThanOrEqual(nominal / 2);
    expect(delay).toBeLessThanOrEqual(nominal);
    expect(row.next_attempt_at).toBeLessThanOrEqual((row.window_started_at ?? row.created_at) + WINDOW);
    clock.set(row.next_attempt_at);
  }
}

describe('retry schedule (ManualClock)', () => {
  it('retries with growing, jittered delays and fails when the window is over', async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, () => status(500));
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    const attempts = await driveToEnd(notificationId);
    // 10 s, 30 s, 90 s ... (each in [d/2, d]): 6 or 7 attempts fit in one hour.
    expect(attempts).toBeGreaterThanOrEqual(6);
    expect(attempts).toBeLessThanOrEqual(7);
    const row = await notificationRow(t, notificationId);
    expect(row).toMatchObject({ status: 'failed', last_error: 'HTTP 500', attempts });
    expect(receiver.on(path)).toHaveLength(attempts);
    // Every attempt was signed at its own time (the receiver checks the 300 s window).
    expect(receiver.on(path).every((r) => r.signatureProblem === null)).toBe(true);
    expect((await attemptRows(t, notificationId)).length).toBe(attempts);
  });

  it('redelivery restarts the window and the schedule', async () => {
    const g = await game();
    const path = newPath();
    let open = false;
    receiver.script(path, () => (open ? ok() : status(500)));
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    const first = await driveToEnd(notificationId);
    clock.advance(86_400_000);

    const r = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'pending', attempt_count: 0, window_started_at: clock.now(), next_attempt_at: clock.now() });
    // It fails again: a fresh window of 6 or 7 attempts, starting again from 10 s.
    const second = await driveToEnd(notificationId);
    expect(second).toBeGreaterThanOrEqual(6);
    expect((await attemptRows(t, notificationId)).length).toBe(first + second);

    open = true;
    expect((await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {})).status).toBe(200);
    expect((await afterAttempt(notificationId, 1)).status).toBe('succeeded');
  });

  it('a refund waits while its ship_order is retried, and goes out once that failed', async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, (r) => (r.body.notification_type === 'ship_order' ? status(500) : ok()));
    const { notificationId, refundId } = await paidOrder(t, g, receiver.url + path, { refund: true });
    const shipAttempts = await driveToEnd(notificationId);
    expect((await notificationRow(t, notificationId)).status).toBe('failed');
    // The refund (due all along) goes out right after the ship_order's last attempt, not before.
    expect((await afterAttempt(refundId!, 1)).status).toBe('succeeded');
    expect(receiver.on(path).map((r) => r.body.notification_type)).toEqual([...Array(shipAttempts).fill('ship_order'), 'refund']);
  });

  it('a refund blocked behind a failing ship_order gets its whole window from when that one settled', async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, () => status(500));
    const { notificationId, refundId } = await paidOrder(t, g, receiver.url + path, { refund: true });
    await driveToEnd(notificationId);
    const ship = await notificationRow(t, notificationId);
    expect(ship.status).toBe('failed');
    // Set in the transaction that settled the ship_order: nearly a whole window after creation.
    const refund = await notificationRow(t, refundId!);
    expect(refund.window_started_at).toBe(ship.updated_at);
    expect(refund.window_started_at! - refund.created_at).toBeGreaterThan(WINDOW / 2);
    // So the refund is retried on the full schedule (6 or 7 attempts in one hour), not failed
    // after its first attempt because its window ran from its creation.
    const refundAttempts = await driveToEnd(refundId!);
    expect(refundAttempts).toBeGreaterThanOrEqual(6);
    expect(await notificationRow(t, refundId!)).toMatchObject({ status: 'failed', attempts: refundAttempts });
  });

  it('a notification locked by a crashed dispatcher is delivered when the lease runs out', async () => {
    const g = await game();
    const path = newPath();
    const lockedUntil = clock.now() + 70_000;
    const { notificationId } = await paidOrder(t, g, receiver.url + path, { lockedUntil });
    // Negative check: a few poll rounds pass without the locked row being touched.
    for (let i = 0; i < 4; i++) {
      t.service.dispatcher.kick();
      await new Promise((r) => setTimeout(r, 60));
    }
    expect(receiver.on(path)).toHaveLength(0);
    expect((await notificationRow(t, notificationId)).locked_by).toBe('crashed');

    clock.set(lockedUntil + 1);
    const row = await afterAttempt(notificationId, 1);
    expect(row.status).toBe('succeeded');
    expect(receiver.on(path)).toHaveLength(1);
  });
});
