import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nppaSessionId } from '../src/compliance/identity.js';
import { ManualClock } from '../src/lib/clock.js';
import { createNppaGame, enter, leave } from './helpers/nppa-game.js';
import { startNppaStandIn, type StandIn } from './helpers/nppa-stand-in.js';
import { ADMIN_TOKEN, admin, createGame, startService, type TestService } from './helpers/service.js';
import { waitFor } from './helpers/wait.js';

const bj = (s: string) => Date.parse(`${s}+08:00`);

/**
 * A service on a manual clock with a national-system stand-in and a 1 h session timeout,
 * started before the describe block's tests and stopped after them; `sweepMs` is how often
 * the timeout sweeper runs.
 */
function serviceWithStandIn(sweepMs: number) {
  const ctx = { clock: new ManualClock(bj('2026-11-20T10:00:00')), standIn: undefined as unknown as StandIn, t: undefined as unknown as TestService };
  beforeAll(async () => {
    ctx.standIn = await startNppaStandIn({ clock: ctx.clock });
    ctx.t = await startService({
      clock: ctx.clock,
      env: { NPPA_BASE_URL: ctx.standIn.url, NPPA_POLL_INTERVAL_MS: '20', SWEEP_INTERVAL_MS: String(sweepMs), SESSION_TIMEOUT_SECONDS: '3600' },
    });
  });
  afterAll(async () => {
    await ctx.t?.stop();
    await ctx.standIn?.close();
  });
  return ctx;
}

describe('sessions: timeout sweep, operator listing, online time per Beijing day', () => {
  const ctx = serviceWithStandIn(20);
  const { clock } = ctx;

  const sessions = async (q: string) => {
    const r = await admin(ctx.t, 'GET', `/admin/v1/sessions?${q}`);
    expect(r.status).toBe(200);
    return r.body;
  };

  it('closes a session with no leave after the timeout (reason timeout) and reports the logout', async () => {
    const game = await createNppaGame(ctx.t, ctx.standIn);
    const t0 = clock.now();
    await enter(ctx.t, game, 'sleepy', 's-timeout');
    await enter(ctx.t, game, 'active', 's-active');
    // Both logins uploaded before the clock jumps: left pending, they would be a backlog an
    // hour old, which is sent with one shift for all of it (docs/compliance.md;
    // test/nppa-retime.test.ts), the logout's `ot` too.
    const logins = [nppaSessionId(game.gameId, 's-timeout'), nppaSessionId(game.gameId, 's-active')];
    await waitFor(() => logins.every((si) => ctx.standIn.accepted.some((a) => a.si === si && a.bt === 1)), 'the login uploads');
    clock.advance(3_599_000);
    await leave(ctx.t, game, 'active', 's-active');
    clock.advance(2_000);
    const page = await waitFor(async () => {
      const p = await sessions(`game_id=${game.gameId}&combo_id=sleepy`);
      return p.data[0]?.close_reason === 'timeout' ? p : null;
    }, 'the sweep');
    expect(page.data[0]).toMatchObject({ session_id: 's-timeout', entered_at: t0, left_at: t0 + 3_600_000, open: false, online_seconds: 3600 });
    const active = (await sessions(`game_id=${game.gameId}&combo_id=active`)).data[0];
    expect(active).toMatchObject({ close_reason: 'leave', left_at: t0 + 3_599_000 });
    // a late leave of the timed-out session is a retry: 200, nothing changes
    await leave(ctx.t, game, 'sleepy', 's-timeout');
    expect((await sessions(`game_id=${game.gameId}&combo_id=sleepy`)).data[0].left_at).toBe(t0 + 3_600_000);
    // the logout went to the national system with ot = the close time, exactly once
    const si = nppaSessionId(game.gameId, 's-timeout');
    await waitFor(() => ctx.standIn.accepted.some((a) => a.si === si && a.bt === 0), 'the logout upload');
    const logouts = ctx.standIn.accepted.filter((a) => a.si === si && a.bt === 0);
    expect(logouts).toHaveLength(1);
    expect(logouts[0]!.ot).toBe((t0 + 3_600_000) / 1000);
  });

  it('lists sessions newest first with cursor paging and the open filter', async () => {
    const game = await createGame(ctx.t);
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      await enter(ctx.t, game, 'pager', `page-${i}`);
    }
    clock.advance(1000);
    await leave(ctx.t, game, 'pager', 'page-1');
    await leave(ctx.t, game, 'pager', 'never-entered');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const p: any = await sessions(`game_id=${game.gameId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(p.data.length).toBeLessThanOrEqual(2);
      seen.push(...p.data.map((s: any) => s.session_id));
      cursor = p.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['never-entered', 'page-4', 'page-3', 'page-2', 'page-1', 'page-0']);
    const open = await sessions(`game_id=${game.gameId}&open=true`);
    expect(open.data.map((s: any) => s.session_id)).toEqual(['page-4', 'page-3', 'page-2', 'page-0']);
    const closed = await sessions(`game_id=${game.gameId}&open=false`);
    expect(closed.data.map((s: any) => s.session_id)).toEqual(['never-entered', 'page-1']);
    expect(closed.data[0]).toMatchObject({ entered_at: null, online_seconds: null, close_reason: 'leave' });
    // A forged cursor whose time is not a safe integer is 400 (PostgreSQL's bigint refused it: 500).
    for (const forged of [[1.5, 'a', 'b'], [1e20, 'a', 'b'], [-1e300, 'a', 'b']]) {
      const r = await fetch(`${ctx.t.url}/admin/v1/sessions?game_id=${game.gameId}&cursor=${Buffer.from(JSON.stringify(forged)).toString('base64url')}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(r.status, JSON.stringify(forged)).toBe(400);
    }
  });

  it('without game_id, lists every game newest first (ties by game, then session), paged', async () => {
    const games = [await createGame(ctx.t), await createGame(ctx.t)];
    clock.advance(1000);
    // same created_at in both games: the order is (created_at, game_id, session_id) descending
    for (const g of games) for (const s of ['m-a', 'm-b']) await enter(ctx.t, g, 'merger', s);
    clock.advance(1000);
    await enter(ctx.t, games[0]!, 'merger', 'm-c');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const p: any = await sessions(`combo_id=merger&limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...p.data.map((s: any) => `${s.game_id}/${s.session_id}`));
      cursor = p.next_cursor;
    } while (cursor);
    const [g0, g1] = games.map((g) => g.gameId).sort();
    expect(seen).toEqual([`${games[0]!.gameId}/m-c`, `${g1}/m-b`, `${g1}/m-a`, `${g0}/m-b`, `${g0}/m-a`]);
    const all = await sessions('limit=3');
    expect(all.data[0]).toMatchObject({ game_id: games[0]!.gameId, session_id: 'm-c' });
    const open = await sessions('open=true&limit=200');
    expect(open.data.map((s: any) => s.session_id)).toContain('m-c');
  });

  it('rejects bad query parameters at each bound', async () => {
    for (const [q, ok] of [
      ['limit=0', false],
      ['limit=1', true],
      ['limit=200', true],
      ['limit=201', false],
      ['limit=x', false],
      ['open=maybe', false],
      ['cursor=bm90LWEtY3Vyc29y', false],
      [`game_id=${'g'.repeat(65)}`, false],
      [`game_id=${'g'.repeat(64)}`, true],
    ] as const) {
      const r = await admin(ctx.t, 'GET', `/admin/v1/sessions?${q}`);
      expect([q, r.status]).toEqual([q, ok ? 200 : 400]);
      if (!ok) expect(r.body.error).toBe('invalid_request');
    }
    expect((await admin(ctx.t, 'GET', '/admin/v1/sessions', undefined)).status).toBe(200);
    const anon = await fetch(`${ctx.t.url}/admin/v1/sessions`);
    expect(anon.status).toBe(401);
  });

  it('splits online time across Beijing midnight, per day for the last 7 days', async () => {
    const game = await createGame(ctx.t);
    clock.set(bj('2026-11-21T23:40:00')); // under the 1 h timeout of this file
    await enter(ctx.t, game, 'night-owl', 'night-1');
    clock.set(bj('2026-11-22T00:20:00'));
    await leave(ctx.t, game, 'night-owl', 'night-1');
    clock.set(bj('2026-11-22T09:00:00'));
    await enter(ctx.t, game, 'night-owl', 'night-2'); // still open: counts up to now
    clock.set(bj('2026-11-22T09:10:00'));
    const p = await sessions(`game_id=${game.gameId}&combo_id=night-owl`);
    expect(p.online_days).toHaveLength(7);
    expect(p.online_days.at(-1)).toEqual({ date: '2026-11-22', online_seconds: 1200 + 600 });
    expect(p.online_days.at(-2)).toEqual({ date: '2026-11-21', online_seconds: 1200 });
    expect(p.online_days[0].date).toBe('2026-11-16');
    const player = await admin(ctx.t, 'GET', `/admin/v1/games/${game.gameId}/players/night-owl`);
    expect(player.status).toBe(200);
    expect(player.body.online_seconds_today).toBe(1200 + 600);
    expect(player.body.online_days).toEqual(p.online_days);
    expect(player.body.recorded).toBe(false);
  });
});

// PROTOCOL 4: an open session with no leave for the timeout is closed with reason `timeout`, at
// the moment the timeout ran out; the sweeper only records it. Until it has, nothing may count
// past that moment, and a leave arriving late changes nothing.
describe('sessions past their timeout before the sweeper has run', () => {
  const ctx = serviceWithStandIn(600_000); // the sweeper held
  const { clock } = ctx;
  const sessions = async (q: string) => (await admin(ctx.t, 'GET', `/admin/v1/sessions?${q}`)).body;

  it('counts no more than the timeout, and a late leave closes the session at entered + timeout with reason timeout', async () => {
    for (const reported of [false, true]) {
      const game = reported ? await createNppaGame(ctx.t, ctx.standIn) : await createGame(ctx.t);
      const t0 = clock.now();
      await enter(ctx.t, game, 'late', 's-late');
      if (reported) await waitFor(() => ctx.standIn.accepted.some((a) => a.si === nppaSessionId(game.gameId, 's-late') && a.bt === 1), 'the login upload');
      clock.advance(3_660_000); // an hour and a minute: past the timeout; the sweeper is held
      const q = `game_id=${game.gameId}&combo_id=late`;
      const open = await sessions(q);
      expect([reported, open.data[0]]).toMatchObject([reported, { open: true, online_seconds: 3600 }]);
      expect(open.online_days.at(-1).online_seconds).toBe(3600);
      await leave(ctx.t, game, 'late', 's-late');
      const closed = await sessions(q);
      expect([reported, closed.data[0]]).toMatchObject([reported, { open: false, left_at: t0 + 3_600_000, close_reason: 'timeout', online_seconds: 3600 }]);
      if (reported) {
        const events = (await admin(ctx.t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events`)).body.data as { bt: number; ot: number }[];
        expect(events.filter((e) => e.bt === 0).map((e) => e.ot)).toEqual([t0 + 3_600_000]);
      }
    }
  });

  // A session may be longer than today's timeout: closed under a longer one before the setting
  // was lowered. It still counts in the player's online days.
  it('counts a session longer than the current timeout in the online days', async () => {
    const game = await createGame(ctx.t);
    const now = clock.now();
    await ctx.t.service.database.db
      .insertInto('sessions')
      .values({ game_id: game.gameId, session_id: 's-long', combo_id: 'marathon', entered_at: now - 10 * 86_400_000, left_at: now - 60_000, close_reason: 'leave', created_at: now - 10 * 86_400_000 })
      .execute();
    const days = (await sessions(`game_id=${game.gameId}&combo_id=marathon`)).online_days as { online_seconds: number }[];
    // Online all week: every past day whole, today up to a minute ago.
    expect(days.slice(0, 6).map((d) => d.online_seconds)).toEqual(Array(6).fill(86_400));
    expect(days[6]!.online_seconds).toBeGreaterThan(0);
  });
});
