import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { METRICS_TOKEN, sample } from './helpers/metrics.js';
import { notificationRow, paidOrder } from './helpers/paid-orders.js';
import { Receiver, ok, status, until, type Received } from './helpers/receiver.js';
import { runCli } from './helpers/cli.js';

// Delivery health (operators.md 3): a receiver failing, then recovering. The retry schedule's
// base is 10 minutes: after a failed attempt the next one is 5 to 10 minutes away, so only a
// retry sent now reaches the receiver while a test runs.
const RETRY_BASE_MS = 600_000;
const keys = new Map<string, string[]>();
let receiver: Receiver;
let t: TestService;

beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
  t = await startService({ env: { METRICS_TOKEN, NOTIFY_TIMEOUT_MS: '2000', NOTIFY_RETRY_BASE_MS: String(RETRY_BASE_MS) } });
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

let paths = 0;
/** A game whose notify path answers 500 until `recover()`. */
async function failingGame(): Promise<{ g: TestGame; url: string; path: string; host: string; recover: () => void }> {
  const g = await createGame(t);
  keys.set(g.gameId, [g.secret]);
  const path = `/health/${++paths}`;
  let up = false;
  receiver.script(path, () => (up ? ok() : status(500, 'maintenance')));
  return { g, path, url: receiver.url + path, host: new URL(receiver.url).host, recover: () => (up = true) };
}

const shown = async (id: string) => (await admin(t, 'GET', `/admin/v1/notifications/${id}`)).body;
/** The notification once its first attempt is recorded. */
const attempted = (id: string) => until(`notification ${id} attempted`, async () => ((await notificationRow(t, id)).attempts > 0 ? shown(id) : null));
const settled = (id: string) => until(`notification ${id} delivered`, async () => ((await notificationRow(t, id)).status === 'succeeded' ? shown(id) : null));

/** `arrivals` resolves within a second (the retry went out now, not at its scheduled time). */
async function withinASecond<T>(arrivals: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no delivery within a second of the retry')), 1000)));
  try {
    return await Promise.race([arrivals, late]);
  } finally {
    clearTimeout(timer);
  }
}

const ids = (page: { data: { notification_id: string }[] }) => page.data.map((n) => n.notification_id);

describe('failing status', () => {
  it('shows a notification whose attempt failed as failing at once: listed, filtered, counted, gauged', async () => {
    const { g, url, path, host } = await failingGame();
    const first = receiver.arrival(path);
    const { notificationId } = await paidOrder(t, g, url);
    await first;
    const n = await attempted(notificationId);
    expect(n).toMatchObject({ status: 'failing', attempt_count: 1, last_error: 'HTTP 500', delivered_at: null });
    expect(n.next_attempt_at).toBeGreaterThan(Date.now() + RETRY_BASE_MS / 2 - 60_000);
    // Another one not attempted yet (its order's URL is not taken by the receiver's script).
    const waiting = await paidOrder(t, g, url, { lockedUntil: Date.now() + 3_600_000 });

    const list = (q: string) => admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}${q}`);
    expect(ids((await list('&status=failing')).body)).toEqual([notificationId]);
    expect(ids((await list('&status=pending')).body)).toEqual([waiting.notificationId]);
    expect(ids((await list('&status=failed')).body)).toEqual([]);
    expect((await list('')).body.data.map((x: { status: string }) => x.status)).toEqual(['pending', 'failing']);
    expect((await list('&status=failin')).status).toBe(400);

    const metrics = await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    expect(sample(metrics, 'combo_notifications_undelivered', { game_id: g.gameId, status: 'failing' })).toBe(1);
    expect(sample(metrics, 'combo_notifications_undelivered', { game_id: g.gameId, status: 'pending' })).toBe(1);

    const h = await admin(t, 'GET', `/admin/v1/games/${g.gameId}/delivery-health`);
    expect(h.status).toBe(200);
    expect(h.body.game_id).toBe(g.gameId);
    expect(h.body.hosts).toEqual([
      {
        host,
        last_hour: { attempts: 1, succeeded: 0, success_rate: 0 },
        last_day: { attempts: 1, succeeded: 0, success_rate: 0 },
        last_error: { at: expect.any(Number), notification_id: notificationId, status_code: 500, error: 'HTTP 500' },
        undelivered: { pending: 1, failing: 1, failed: 0 },
        oldest_undelivered: { notification_id: expect.any(String), status: expect.any(String), created_at: expect.any(Number) },
      },
    ]);
    // The oldest of the two (created first, or the lower id in the same millisecond).
    expect(h.body.hosts[0].oldest_undelivered.notification_id).toBe(notificationId);
    expect(h.body.hosts[0].oldest_undelivered.status).toBe('failing');
  });
});

describe('retry now', () => {
  it('sends one failing notification within a second once its endpoint recovered', async () => {
    const { g, url, path, recover } = await failingGame();
    const first = receiver.arrival(path);
    const { notificationId } = await paidOrder(t, g, url);
    await first;
    await attempted(notificationId);
    recover();
    const again = receiver.arrival(path);
    const r = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/retry`, {});
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ notification_id: notificationId, attempt_count: 1 });
    const got: Received = await withinASecond(again);
    expect(got.body.notification_id).toBe(notificationId);
    expect(got.signatureProblem).toBeNull();
    expect(await settled(notificationId)).toMatchObject({ status: 'succeeded', attempt_count: 2 });

    const audit = await admin(t, 'GET', `/admin/v1/audit?action=notification.retry&target=${notificationId}`);
    expect(audit.status).toBe(200);
    expect(audit.body.data).toMatchObject([{ action: 'notification.retry', target: notificationId, detail: { status: 'failing', sent_now: true } }]);
    // Delivered: nothing to retry (redeliver sends it again).
    const done = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/retry`, {});
    expect(done.status).toBe(409);
    expect(done.body.message).toMatch(/succeeded: redeliver/);

    const h = (await admin(t, 'GET', `/admin/v1/games/${g.gameId}/delivery-health`)).body.hosts[0];
    expect(h).toMatchObject({ last_day: { attempts: 2, succeeded: 1, success_rate: 0.5 }, undelivered: { pending: 0, failing: 0, failed: 0 }, oldest_undelivered: null });
    expect(h.last_error).toMatchObject({ notification_id: notificationId, status_code: 500 });
  });

  it("sends all of a game's failing notifications now, not other games' ones", async () => {
    const { g, url, path, recover } = await failingGame();
    const other = await failingGame();
    const firsts = [receiver.arrival(path), receiver.arrival(path), receiver.arrival(other.path)];
    const a = await paidOrder(t, g, url);
    const b = await paidOrder(t, g, url);
    const o = await paidOrder(t, other.g, other.url);
    await Promise.all(firsts);
    for (const n of [a, b, o]) await attempted(n.notificationId);
    recover();
    other.recover();
    const arrivals = [receiver.arrival(path), receiver.arrival(path)];
    const r = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/notifications/retry`, {});
    expect(r).toMatchObject({ status: 200, body: { count: 2 } });
    const got = await withinASecond(Promise.all(arrivals));
    expect(got.map((x) => x.body.notification_id).sort()).toEqual([a.notificationId, b.notificationId].sort());
    for (const n of [a, b]) await settled(n.notificationId);
    expect((await shown(o.notificationId)).status).toBe('failing');
    // Nothing failing left: none sent.
    expect((await admin(t, 'POST', `/admin/v1/games/${g.gameId}/notifications/retry`, {})).body).toEqual({ count: 0 });
  });

  it('sends a pending one now, leaves one a dispatcher holds alone, refuses bad requests', async () => {
    const { g, url } = await failingGame();
    const held = await paidOrder(t, g, url, { lockedUntil: Date.now() + 3_600_000 });
    const r = await admin(t, 'POST', `/admin/v1/notifications/${held.notificationId}/retry`, {});
    expect(r.status).toBe(200);
    // Being sent (leased): unchanged.
    expect(await notificationRow(t, held.notificationId)).toMatchObject({ locked_by: 'crashed', attempts: 0 });

    const retry = (p: string, body?: unknown) => admin(t, 'POST', p, body);
    expect((await retry('/admin/v1/notifications/ntf_nope/retry', {})).status).toBe(404);
    expect((await retry(`/admin/v1/notifications/${'x'.repeat(65)}/retry`, {})).status).toBe(400);
    expect((await retry(`/admin/v1/notifications/${held.notificationId}/retry`, { now: true })).status).toBe(400);
    expect((await retry('/admin/v1/games/no_such_game/notifications/retry', {})).status).toBe(404);
    expect((await retry(`/admin/v1/games/${g.gameId}/notifications/retry`, [])).status).toBe(400);
    expect((await admin(t, 'GET', '/admin/v1/games/no_such_game/delivery-health')).status).toBe(404);
    const noToken = await fetch(`${t.url}/admin/v1/games/${g.gameId}/delivery-health`);
    expect(noToken.status).toBe(401);
  });
});

describe('CLI', () => {
  it('shows delivery health per host and retries one or all', async () => {
    const { g, url, path, recover, host } = await failingGame();
    const env = { COMBO_URL: t.url, ADMIN_TOKEN };
    const first = receiver.arrival(path);
    const { notificationId } = await paidOrder(t, g, url);
    await first;
    await attempted(notificationId);

    const h = await runCli(['notifications', 'health', g.gameId], env);
    expect(h.code, h.stderr).toBe(0);
    expect(h.stdout).toMatch(/^HOST\s+LAST_HOUR\s+LAST_DAY\s+PENDING\s+FAILING\s+FAILED/m);
    expect(h.stdout).toMatch(new RegExp(`^${host}\\s+0\\.0% of 1\\s+0\\.0% of 1\\s+0\\s+1\\s+0\\s.*HTTP 500$`, 'm'));

    recover();
    const again = receiver.arrival(path);
    const one = await runCli(['notifications', 'retry', notificationId, '--json'], env);
    expect(one.code, one.stderr).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ notification_id: notificationId });
    await again;
    await settled(notificationId);

    const all = await runCli(['notifications', 'retry', '--game', g.gameId], env);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(`0 failing notification(s) of ${g.gameId} sent now\n`);
    const both = await runCli(['notifications', 'retry', notificationId, '--game', g.gameId], env);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('give one notification id, or --game G');
  }, 180_000);
});
