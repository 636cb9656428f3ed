import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nppaSessionId } from '../src/compliance/identity.js';
import { NppaUploader } from '../src/compliance/uploader.js';
import { ManualClock } from '../src/lib/clock.js';
import { createNppaGame, enter, leave, pool } from './helpers/nppa-game.js';
import { maxPerSecond, startNppaStandIn, type StandIn } from './helpers/nppa-stand-in.js';
import { admin, createGame, startService, type TestService } from './helpers/service.js';
import { waitFor } from './helpers/wait.js';

// Both service processes must share the key that seals secrets at rest.
const ENV = { SECRETS_KEY: randomBytes(32).toString('base64'), NPPA_POLL_INTERVAL_MS: '20', NPPA_RETRY_BASE_MS: '50', NPPA_RATE_LIMIT_PAUSE_MS: '300' };

describe('national-system upload: old items and several processes', () => {
  let standIn: StandIn;
  let t: TestService;
  const clock = new ManualClock(Date.parse('2026-11-20T12:00:00Z'));
  beforeAll(async () => {
    standIn = await startNppaStandIn({ clock });
    t = await startService({ clock, env: { ...ENV, NPPA_BASE_URL: standIn.url } });
  });
  afterAll(async () => {
    await t?.stop();
    await standIn?.close();
  });

  it('re-times items older than 3 minutes, keeping order and intervals, and records the original time', async () => {
    const game = await createNppaGame(t, standIn);
    standIn.hold.set(game.appId, { errcode: 1001, errmsg: 'down' });
    const t0 = clock.now();
    await enter(t, game, 'p1', 'old-1');
    clock.advance(30_000);
    await enter(t, game, 'p2', 'old-2');
    clock.advance(45_500);
    await leave(t, game, 'p1', 'old-1');
    await waitFor(async () => {
      const ev = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.data as any[];
      // A refusal pauses the whole game until the (standing) clock moves: events recorded after
      // it wait for it, so not every event need have been refused yet.
      return ev.length === 3 && ev.some((e) => e.errcode === 1001);
    }, 'the refusal recorded');
    clock.advance(10 * 60_000); // the national system was down for ten minutes
    standIn.hold.delete(game.appId);
    // A request in flight at the jump may still be refused, pausing the game from the new time:
    // move the clock on until the backlog is through.
    await waitFor(async () => {
      if ((await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.counts.uploaded === 3) return true;
      clock.advance(1000);
      return false;
    }, 'uploaded');
    const got = standIn.accepted.filter((a) => a.appId === game.appId);
    const of = (s: string, bt: number) => got.find((i) => i.si === nppaSessionId(game.gameId, s) && i.bt === bt)!;
    const [a, b, c] = [of('old-1', 1), of('old-2', 1), of('old-1', 0)];
    expect(b.ot - a.ot).toBe(30);
    expect(c.ot - a.ot).toBe(75);
    expect(c.ot * 1000).toBeLessThanOrEqual(c.timestamps);
    expect(c.timestamps - a.ot * 1000).toBeLessThan(180_000);
    expect(a.ot).toBeGreaterThan(Math.floor(t0 / 1000) + 500); // shifted by the delay
    const events = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.data as any[];
    const login1 = events.find((e) => e.session_id === 'old-1' && e.bt === 1);
    expect(login1.ot).toBe(t0); // original time kept
    expect(login1.sent_ot).toBe(a.ot);
    expect(standIn.violations).toEqual([]);
  });

  it('sends a game\'s backlog oldest first with one shift, so a logout never reaches the national system before its login', async () => {
    const game = await createNppaGame(t, standIn);
    const events = async () => (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body as { counts: Record<string, number>; data: any[] };
    const refused = () => standIn.requests.some((r) => r.appId === game.appId && r.answer.errcode === 1001);
    standIn.hold.set(game.appId, { errcode: 1001, errmsg: 'down' });
    await enter(t, game, 'p0', 'order-0');
    await waitFor(refused, 'a refusal');
    clock.advance(100_000);
    await enter(t, game, 'p1', 'order-1');
    clock.advance(80_000);
    await leave(t, game, 'p1', 'order-1');
    // T + 360 s: the whole backlog is older than 3 minutes and spans more than one batch's 170 s.
    clock.advance(180_000);
    standIn.hold.delete(game.appId);
    // With one delay for the backlog, an item goes when its shifted time has come (and a request
    // in flight at the jump may still be refused, pausing the game): move the clock on.
    await waitFor(async () => {
      if ((await events()).counts.uploaded === 3) return true;
      clock.advance(1000);
      return false;
    }, 'the backlog uploaded');
    const got = standIn.accepted.filter((a) => a.appId === game.appId);
    const key = (s: string, bt: number) => `${nppaSessionId(game.gameId, s)}/${bt}`;
    // Sent in recorded order...
    expect(got.map((i) => `${i.si}/${i.bt}`)).toEqual([key('order-0', 1), key('order-1', 1), key('order-1', 0)]);
    // ...with one shift: the recorded intervals kept within a batch, and across batches nearly
    // (the shift shrinks a second per CATCH_UP seconds the second batch waited for its time,
    // ~10 s here), and so the order kept.
    const [a, b, c] = got as [(typeof got)[0], (typeof got)[0], (typeof got)[0]];
    expect(b.ot - a.ot).toBe(100);
    expect(c.ot - b.ot).toBeGreaterThanOrEqual(78);
    expect(c.ot - b.ot).toBeLessThanOrEqual(80);
    expect(standIn.violations).toEqual([]);
  });

  it('a 1006 (over the rate limit) pause holds every process sharing the database', async () => {
    const second = await startService({ clock, db: t.db, env: { ...ENV, NPPA_BASE_URL: standIn.url } });
    try {
      const game = await createNppaGame(t, standIn);
      const events = async () => (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body as { counts: Record<string, number>; data: any[] };
      const requests = () => standIn.requests.filter((r) => r.appId === game.appId).length;
      standIn.hold.set(game.appId, { errcode: 1006, errmsg: 'over rate limit' });
      await enter(t, game, 'p1', 'paused-1');
      await waitFor(async () => (await events()).data[0]?.errcode === 1006, 'the 1006 recorded');
      standIn.hold.delete(game.appId);
      const before = requests();
      // The clock stands still, so the pause (NPPA_RATE_LIMIT_PAUSE_MS) lasts until it moves.
      await enter(second, game, 'p2', 'paused-2');
      await enter(t, game, 'p3', 'paused-3');
      // Nothing to wait for when nothing must happen: give both processes some 25 polls each.
      await new Promise((r) => setTimeout(r, 500));
      expect(requests()).toBe(before);
      clock.advance(300);
      await waitFor(async () => (await events()).counts.uploaded === 3, 'uploaded after the pause');
      expect(standIn.violations).toEqual([]);
    } finally {
      await second.stop();
    }
  });

  it('a game stays with the process that uploads it (its 10 requests a second are counted there) until that one stops', async () => {
    const second = await startService({ clock, db: t.db, env: { ...ENV, NPPA_BASE_URL: standIn.url } });
    const ownerOf = (s: TestService) => (s.service.jobs.find((j) => j instanceof NppaUploader) as NppaUploader).owner;
    const lease = async (gameId: string) => t.service.database.db.selectFrom('nppa_leases').selectAll().where('game_id', '=', gameId).executeTakeFirstOrThrow();
    let stopped = false;
    try {
      const game = await createNppaGame(t, standIn);
      const uploaded = async (n: number) => (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.counts.uploaded === n;
      await enter(t, game, 'p1', 'sticky-1');
      await waitFor(() => uploaded(1), 'the first upload');
      const holder = (await lease(game.gameId)).owner;
      expect([ownerOf(t), ownerOf(second)]).toContain(holder);
      // Kept after the upload (not given back), so the next events go through the same process.
      expect((await lease(game.gameId)).expires_at).toBeGreaterThan(clock.now());
      await enter(second, game, 'p2', 'sticky-2');
      await enter(t, game, 'p3', 'sticky-3');
      await waitFor(() => uploaded(3), 'the next uploads');
      expect((await lease(game.gameId)).owner).toBe(holder);
      // A process that stops gives its leases back: the other one takes the game at once.
      const [leaving, staying] = holder === ownerOf(t) ? [t, second] : [second, t];
      if (leaving === second) {
        await second.stop();
        stopped = true;
      } else {
        await t.service.jobs.find((j) => j instanceof NppaUploader)!.stop();
      }
      expect((await lease(game.gameId)).expires_at).toBe(0);
      await enter(staying, game, 'p4', 'sticky-4');
      await waitFor(() => uploaded(4), 'the upload by the other process');
      expect((await lease(game.gameId)).owner).toBe(ownerOf(staying));
      if (leaving === t) t.service.jobs.find((j) => j instanceof NppaUploader)!.start();
    } finally {
      if (!stopped) await second.stop();
    }
  });

  // Each process keeps a game's settings in memory for up to 5 s: the process that uploads may
  // not know yet of credentials set through another. Skipping is for good, so it must not
  // skip on that stale view.
  it('a process whose snapshot predates the game\'s credentials uploads its events, not skips them', async () => {
    const second = await startService({ clock, db: t.db, env: { ...ENV, NPPA_BASE_URL: standIn.url } });
    const firstUploader = t.service.jobs.find((j) => j instanceof NppaUploader)!;
    await firstUploader.stop(); // the second process does the uploading
    try {
      const game = await createGame(t);
      await enter(second, game, 'p0', 'before-credentials'); // the second process now holds the game without credentials
      const creds = { appId: `app${randomBytes(6).toString('hex')}`, bizId: `biz${randomBytes(4).toString('hex')}`, secretKey: randomBytes(16).toString('hex') };
      expect((await admin(t, 'PATCH', `/admin/v1/games/${game.gameId}`, { nppa: { app_id: creds.appId, biz_id: creds.bizId, secret_key: creds.secretKey } })).status).toBe(200);
      standIn.addApp(creds);
      await enter(t, game, 'p1', 'after-credentials');
      await waitFor(async () => (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.counts.pending === 0, 'the event handled');
      const counts = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.counts;
      expect(counts).toEqual({ pending: 0, uploaded: 1, failed: 0, skipped: 0 });
      expect(standIn.requests.filter((r) => r.appId === creds.appId).flatMap((r) => r.items)).toHaveLength(1);
    } finally {
      await second.stop();
      firstUploader.start();
    }
  });

  it('never sends an event twice with two service processes on one database, and keeps 10 requests/s per game', async () => {
    const second = await startService({ clock, db: t.db, env: { ...ENV, NPPA_BASE_URL: standIn.url } });
    try {
      // 12 callers: more than the default 1,000 requests a second on a fast machine.
      const game = await createNppaGame(t, standIn, { rateLimitPerSecond: 100_000 });
      const services = [t, second];
      await pool(
        Array.from({ length: 600 }, (_, i) => i),
        12,
        async (i) => {
          const s = services[i % 2]!;
          await enter(s, game, `p${i}`, `multi-${i}`);
          await leave(s, game, `p${i}`, `multi-${i}`);
        },
      );
      await waitFor(async () => (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.counts.uploaded === 1200, 'uploaded', 120_000);
      const got = standIn.accepted.filter((a) => a.appId === game.appId);
      expect(got).toHaveLength(1200);
      expect(new Set(got.map((i) => `${i.si}/${i.bt}`)).size).toBe(1200);
      expect(maxPerSecond(standIn.requests, game.appId)).toBeLessThanOrEqual(10);
      expect(standIn.violations).toEqual([]);
    } finally {
      await second.stop();
    }
  });
});
