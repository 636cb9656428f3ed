import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { SessionSweeper } from '../src/sessions/sweeper.js';
import { createNppaGame, enter, leave, type NppaGame } from './helpers/nppa-game.js';
import { startNppaStandIn, type StandIn } from './helpers/nppa-stand-in.js';
import { admin, createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * Sessions of games that report to the national system (PROTOCOL 4, docs/compliance.md
 * "Behaviour upload"): there enter and leave run in a transaction with their behaviour event,
 * a path of its own beside the one-statement path of games without credentials.
 */

const bj = (s: string) => Date.parse(`${s}+08:00`);
const TIMEOUT_MS = 3_600_000; // SESSION_TIMEOUT_SECONDS=3600 below

function withService(env: Record<string, string>, clock?: ManualClock) {
  const ctx = { standIn: undefined as unknown as StandIn, t: undefined as unknown as TestService };
  beforeAll(async () => {
    ctx.standIn = await startNppaStandIn(clock ? { clock } : {});
    ctx.t = await startService({ clock, env: { NPPA_BASE_URL: ctx.standIn.url, NPPA_POLL_INTERVAL_MS: '20', ...env } });
  });
  afterAll(async () => {
    await ctx.t?.stop();
    await ctx.standIn?.close();
  });
  return ctx;
}

/** The session rows and behaviour events the service wrote for one session. */
async function stored(t: TestService, game: TestGame, sessionId: string) {
  const db = t.service.database.db;
  const rows = await db.selectFrom('sessions').selectAll().where('game_id', '=', game.gameId).where('session_id', '=', sessionId).execute();
  // In the order they were written: without an order PostgreSQL may return a row the uploader
  // has updated after a later one (a CI run listed a logout before its login).
  const events = await db
    .selectFrom('nppa_events')
    .select(['bt', 'ot_ms', 'combo_id'])
    .where('game_id', '=', game.gameId)
    .where('session_id', '=', sessionId)
    .orderBy('ot_ms')
    .orderBy('event_id')
    .execute();
  return { rows, events: events.map((e) => ({ ...e, bt: Number(e.bt), ot_ms: Number(e.ot_ms) })) };
}

const report = (t: TestService, game: TestGame, what: 'enter-game' | 'leave-game', comboId: string, sessionId: string) =>
  signed(t, game, 'POST', `/v1/server/${what}`, { combo_id: comboId, session_id: sessionId });

describe('enter and leave for a game with national-system credentials (PROTOCOL 4)', () => {
  const ctx = withService({ SESSION_TIMEOUT_SECONDS: '3600' });
  let game: NppaGame;
  beforeAll(async () => {
    game = await createNppaGame(ctx.t, ctx.standIn);
  });

  it('refuses a leave naming another player\'s session with 400, leaving the session open and writing no logout', async () => {
    await enter(ctx.t, game, 'owner', 's-other-leave');
    const r = await report(ctx.t, game, 'leave-game', 'intruder', 's-other-leave');
    expect([r.status, r.body?.error]).toEqual([400, 'invalid_request']);
    expect(r.body.message).toContain('belongs to another combo_id');
    const { rows, events } = await stored(ctx.t, game, 's-other-leave');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ combo_id: 'owner', left_at: null, close_reason: null });
    expect(events.map((e) => e.bt)).toEqual([1]);
    // the owner's leave still closes it
    await leave(ctx.t, game, 'owner', 's-other-leave');
    expect((await stored(ctx.t, game, 's-other-leave')).rows[0]).toMatchObject({ close_reason: 'leave' });
  });

  it('refuses an enter on another player\'s session, on a closed session and on a leave without enter with 400', async () => {
    await enter(ctx.t, game, 'first', 's-enter-other');
    const other = await report(ctx.t, game, 'enter-game', 'second', 's-enter-other');
    expect([other.status, other.body?.error]).toEqual([400, 'invalid_request']);
    expect(other.body.message).toContain('belongs to another combo_id');

    await enter(ctx.t, game, 'closer', 's-enter-closed');
    await leave(ctx.t, game, 'closer', 's-enter-closed');
    const closed = await report(ctx.t, game, 'enter-game', 'closer', 's-enter-closed');
    expect([closed.status, closed.body?.error]).toEqual([400, 'invalid_request']);
    expect(closed.body.message).toContain('already closed');

    await leave(ctx.t, game, 'orphan', 's-enter-orphan');
    const orphan = await report(ctx.t, game, 'enter-game', 'orphan', 's-enter-orphan');
    expect([orphan.status, orphan.body?.error]).toEqual([400, 'invalid_request']);

    // nothing changed: no second login, the sessions as they were
    expect(await stored(ctx.t, game, 's-enter-other')).toMatchObject({ rows: [{ combo_id: 'first', left_at: null }], events: [{ bt: 1 }] });
    expect((await stored(ctx.t, game, 's-enter-closed')).events.map((e) => e.bt)).toEqual([1, 0]);
    expect(await stored(ctx.t, game, 's-enter-orphan')).toMatchObject({ rows: [{ entered_at: null, close_reason: 'leave' }], events: [{ bt: 0 }] });
  });

  it('records exactly one login event for a session whose enter-game is retried', async () => {
    await enter(ctx.t, game, 'retrier', 's-retry');
    for (let i = 0; i < 3; i++) await enter(ctx.t, game, 'retrier', 's-retry'); // PROTOCOL 4: same session, same player, open -> 200
    await Promise.all(Array.from({ length: 5 }, () => enter(ctx.t, game, 'retrier', 's-retry')));
    const { rows, events } = await stored(ctx.t, game, 's-retry');
    expect(rows).toHaveLength(1);
    expect(events).toEqual([expect.objectContaining({ bt: 1, combo_id: 'retrier', ot_ms: Number(rows[0]!.entered_at) })]);
  });

  it('records a leave without enter as a closed session with one logout event (never dropped)', async () => {
    await leave(ctx.t, game, 'no-enter', 's-orphan');
    const { rows, events } = await stored(ctx.t, game, 's-orphan');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ combo_id: 'no-enter', entered_at: null, close_reason: 'leave' });
    expect(events).toEqual([{ bt: 0, combo_id: 'no-enter', ot_ms: Number(rows[0]!.left_at) }]);
    // a retried leave is 200 and writes nothing more
    await leave(ctx.t, game, 'no-enter', 's-orphan');
    expect((await stored(ctx.t, game, 's-orphan')).events).toHaveLength(1);
  });

  it('answers 200 to 20 concurrent identical leaves of an unknown session, storing one session and one logout', async () => {
    const answers = await Promise.all(Array.from({ length: 20 }, () => report(ctx.t, game, 'leave-game', 'racer', 's-orphan-race')));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const { rows, events } = await stored(ctx.t, game, 's-orphan-race');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ entered_at: null, close_reason: 'leave' });
    expect(events.map((e) => e.bt)).toEqual([0]);
  });

  // docs/api.md: "pass next_cursor back as cursor until it is null"
  it('answers next_cursor null for a last page that is exactly full, in the session and national-system event listings', async () => {
    const g = await createNppaGame(ctx.t, ctx.standIn);
    await enter(ctx.t, g, 'pages', 'p-1');
    await leave(ctx.t, g, 'pages', 'p-1'); // 2 events
    await enter(ctx.t, g, 'pages', 'p-2'); // 2 sessions, 3 events
    const sessions = await admin(ctx.t, 'GET', `/admin/v1/sessions?game_id=${g.gameId}&limit=2`);
    expect(sessions.status).toBe(200);
    expect(sessions.body.data).toHaveLength(2);
    expect(sessions.body.next_cursor).toBeNull();
    const one = await admin(ctx.t, 'GET', `/admin/v1/sessions?game_id=${g.gameId}&limit=1`);
    expect(one.body.next_cursor).toEqual(expect.any(String));
    const rest = await admin(ctx.t, 'GET', `/admin/v1/sessions?game_id=${g.gameId}&limit=1&cursor=${one.body.next_cursor}`);
    expect([rest.body.data.length, rest.body.next_cursor]).toEqual([1, null]);

    const events = await admin(ctx.t, 'GET', `/admin/v1/games/${g.gameId}/nppa/events?limit=3`);
    expect(events.status).toBe(200);
    expect(events.body.data).toHaveLength(3);
    expect(events.body.next_cursor).toBeNull();
    const first = await admin(ctx.t, 'GET', `/admin/v1/games/${g.gameId}/nppa/events?limit=2`);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const last = await admin(ctx.t, 'GET', `/admin/v1/games/${g.gameId}/nppa/events?limit=2&cursor=${first.body.next_cursor}`);
    expect([last.body.data.length, last.body.next_cursor]).toEqual([1, null]);
  });

  // docs/api.md: "with game_id and combo_id also online_days"
  it('adds online_days to the session listing only when both game_id and combo_id are given', async () => {
    await enter(ctx.t, game, 'days', 's-days');
    const both = await admin(ctx.t, 'GET', `/admin/v1/sessions?game_id=${game.gameId}&combo_id=days`);
    expect(both.body.online_days).toHaveLength(7);
    for (const q of [`game_id=${game.gameId}`, 'combo_id=days', '']) {
      const r = await admin(ctx.t, 'GET', `/admin/v1/sessions?${q}`);
      expect([q, r.status, 'online_days' in r.body]).toEqual([q, 200, false]);
    }
  });
});

describe('session timeout on a manual clock (PROTOCOL 4, docs/compliance.md "Sessions")', () => {
  const clock = new ManualClock(bj('2026-11-20T10:00:00'));
  // The sweeper is started but its interval never comes in the test: each sweep is the test's call.
  const ctx = withService({ SESSION_TIMEOUT_SECONDS: '3600', SWEEP_INTERVAL_MS: '600000' }, clock);
  const sweeper = () => ctx.t.service.jobs.find((j): j is SessionSweeper => j instanceof SessionSweeper)!;

  // docs/compliance.md: a leave after the timeout ran out but before the sweeper closes the
  // session at enter + timeout with reason `timeout`; "exactly at" the timeout is past it
  // (the sweeper takes sessions entered at or before now - timeout).
  for (const reported of [false, true]) {
    it(`answers 200 to a leave exactly at entered_at + timeout and closes the session then with reason timeout (${reported ? 'game with' : 'game without'} credentials)`, async () => {
      const game = reported ? await createNppaGame(ctx.t, ctx.standIn) : await createGame(ctx.t);
      const t0 = clock.now();
      await enter(ctx.t, game, 'edge', 's-edge');
      clock.set(t0 + TIMEOUT_MS);
      // A request that never answers fails here, not at the test's time-out.
      const r = await Promise.race([
        report(ctx.t, game, 'leave-game', 'edge', 's-edge'),
        new Promise<{ status: string }>((resolve) => setTimeout(() => resolve({ status: 'no answer within 3 s' }), 3000).unref()),
      ]);
      expect(r.status).toBe(200);
      const { rows, events } = await stored(ctx.t, game, 's-edge');
      expect(rows[0]).toMatchObject({ left_at: t0 + TIMEOUT_MS, close_reason: 'timeout' });
      if (reported) expect(events.map((e) => [e.bt, e.ot_ms])).toEqual([[1, t0], [0, t0 + TIMEOUT_MS]]);
    });
  }

  it('closes a backlog of more than 500 timed-out sessions in one sweep', async () => {
    const game = await createGame(ctx.t);
    const t0 = clock.now();
    // 1,200 open sessions as enter-game stores them (created_at = entered_at), written at once.
    const rows = Array.from({ length: 1200 }, (_, i) => ({
      game_id: game.gameId,
      session_id: `bulk-${String(i).padStart(4, '0')}`,
      combo_id: `p${i % 50}`,
      entered_at: t0 - i,
      left_at: null,
      close_reason: null,
      created_at: t0 - i,
    }));
    const db = ctx.t.service.database.db;
    for (let i = 0; i < rows.length; i += 200) await db.insertInto('sessions').values(rows.slice(i, i + 200)).execute();
    clock.set(t0 + TIMEOUT_MS);
    await sweeper().sweep();
    const open = await db.selectFrom('sessions').select((eb) => eb.fn.countAll<number>().as('n')).where('game_id', '=', game.gameId).where('left_at', 'is', null).executeTakeFirstOrThrow();
    expect(Number(open.n)).toBe(0);
    const closed = await db.selectFrom('sessions').select(['close_reason']).where('game_id', '=', game.gameId).where('close_reason', '=', 'timeout').execute();
    expect(closed).toHaveLength(1200);
  }, 30_000);
});
