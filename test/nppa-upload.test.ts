import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { nppaDeviceId, nppaSessionId } from '../src/compliance/identity.js';
import { createNppaGame, enter, leave, pool, type NppaGame } from './helpers/nppa-game.js';
import { maxPerSecond, startNppaStandIn, type StandIn } from './helpers/nppa-stand-in.js';
import { ComplianceStore } from '../src/compliance/store.js';
import { migrateToLatest, openDatabase } from '../src/db/index.js';
import { createTestDatabase } from './helpers/db.js';
import { admin, startService, type TestService } from './helpers/service.js';
import { waitFor } from './helpers/wait.js';

let standIn: StandIn;
let t: TestService;
beforeAll(async () => {
  standIn = await startNppaStandIn();
  t = await startService({
    env: { NPPA_BASE_URL: standIn.url, NPPA_POLL_INTERVAL_MS: '20', NPPA_RETRY_BASE_MS: '50', NPPA_RATE_LIMIT_PAUSE_MS: '300' },
  });
});
afterAll(async () => {
  await t?.stop();
  await standIn?.close();
});
beforeEach(() => {
  standIn.itemFault = null;
  standIn.beforeAnswer = null;
  standIn.queue.length = 0;
});

const PI = '1fffbjzos82bs9cnyj1dna7d6d29zg4esnh99u';

async function events(game: NppaGame, status?: string) {
  const r = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events?limit=200${status ? `&status=${status}` : ''}`);
  expect(r.status).toBe(200);
  return r.body as { counts: Record<string, number>; data: any[] };
}

const acceptedOf = (game: NppaGame) => standIn.accepted.filter((a) => a.appId === game.appId);
const uploaded = (game: NppaGame, n: number) => async () => (await events(game)).counts.uploaded === n;

describe('national-system upload', () => {
  it('sends a session\'s logout with the identity its login was accepted with, when the pi is set or cleared between', async () => {
    const game = await createNppaGame(t, standIn);
    const items = (sessionId: string) => acceptedOf(game).filter((i) => i.si === nppaSessionId(game.gameId, sessionId));
    // A guest login, then the real-name check records a pi: the logout still goes as the guest.
    await enter(t, game, 'late-pi', 's-late');
    await waitFor(uploaded(game, 1), 'the guest login uploaded');
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/players/late-pi`, { pi: PI })).status).toBe(200);
    await leave(t, game, 'late-pi', 's-late');
    await waitFor(uploaded(game, 2), 'the logout uploaded');
    for (const i of items('s-late')) {
      expect(i).toMatchObject({ ct: 2, di: nppaDeviceId('late-pi') });
      expect(i.pi).toBeUndefined();
    }
    // The next session is the authenticated player's.
    await enter(t, game, 'late-pi', 's-late-2');
    await waitFor(uploaded(game, 3), 'the next login uploaded');
    expect(items('s-late-2')[0]).toMatchObject({ ct: 0, pi: PI });
    // The pi cleared mid-session: the logout still goes with it.
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/players/late-pi`, { pi: null })).status).toBe(200);
    await leave(t, game, 'late-pi', 's-late-2');
    await waitFor(uploaded(game, 4), 'its logout uploaded');
    expect(items('s-late-2').map((i) => [i.bt, i.ct, i.pi])).toEqual([[1, 0, PI], [0, 0, PI]]);
  });

  it('signs with the secret key exactly as issued, upper-case hex digits included', async () => {
    const game = await createNppaGame(t, standIn, { secretKey: randomBytes(16).toString('hex').toUpperCase().replace(/^./, 'a') });
    await enter(t, game, 'case-1', 's-case');
    await waitFor(uploaded(game, 1), 'the login uploaded');
    expect(acceptedOf(game)).toHaveLength(1);
  });

  it('uploads a guest (ct=2, di) and an authenticated player (ct=0, pi) with one si per session', async () => {
    const game = await createNppaGame(t, standIn);
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/players/auth-1`, { pi: PI })).status).toBe(200);
    const before = Math.floor(Date.now() / 1000);
    await enter(t, game, 'guest-1', 's-guest');
    await enter(t, game, 'auth-1', 's-auth');
    await leave(t, game, 'guest-1', 's-guest');
    await leave(t, game, 'auth-1', 's-auth');
    await waitFor(uploaded(game, 4), '4 uploaded events');
    const got = acceptedOf(game);
    expect(got).toHaveLength(4);
    const guest = got.filter((i) => i.si === nppaSessionId(game.gameId, 's-guest'));
    expect(guest.map((i) => i.bt).sort()).toEqual([0, 1]);
    for (const i of guest) {
      expect(i).toMatchObject({ ct: 2, di: nppaDeviceId('guest-1') });
      expect(i.pi).toBeUndefined();
      expect(i.si).toMatch(/^[0-9a-f]{32}$/);
    }
    const auth = got.filter((i) => i.si === nppaSessionId(game.gameId, 's-auth'));
    expect(auth.map((i) => i.bt).sort()).toEqual([0, 1]);
    for (const i of auth) expect(i).toMatchObject({ ct: 0, pi: PI });
    for (const i of got) {
      expect(i.ot).toBeGreaterThanOrEqual(before);
      expect(i.ot).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    }
    const ev = await events(game, 'uploaded');
    expect(ev.data.every((e) => e.status === 'uploaded' && e.uploaded_at > 0 && e.sent_ot === Math.floor(e.ot / 1000))).toBe(true);
    expect(standIn.violations).toEqual([]);
  });

  for (const [name, answer] of [
    ['1001 system error', { errcode: 1001, errmsg: 'system error' }],
    ['1006 over the rate limit', { errcode: 1006, errmsg: 'over rate limit' }],
    ['1007 request expired', { errcode: 1007, errmsg: 'request expired' }],
    ['an answer that is not JSON', 'no-json'],
    ['an answer that never ends', 'endless'],
  ] as const) {
    it(`retries after ${name} and uploads each item once`, async () => {
      const game = await createNppaGame(t, standIn);
      standIn.hold.set(game.appId, typeof answer === 'string' ? { errcode: 1001, errmsg: 'held' } : answer);
      await enter(t, game, 'p1', 's1');
      await leave(t, game, 'p1', 's1');
      await waitFor(() => standIn.requests.filter((r) => r.appId === game.appId).length >= 1, 'a refused request');
      if (typeof answer === 'string') {
        standIn.hold.delete(game.appId);
        standIn.queue.push(answer);
      } else {
        await waitFor(async () => (await events(game, 'pending')).data.every((e) => e.attempts >= 1 && e.errcode === answer.errcode), 'errcode recorded');
        standIn.hold.delete(game.appId);
      }
      await waitFor(uploaded(game, 2), 'uploaded after retry');
      if (answer === 'endless') {
        // Read up to 64 KiB and hung up: the rest of the answer was never buffered.
        await waitFor(() => standIn.endlessWritten.length === 1, 'the endless answer ended');
        expect(standIn.endlessWritten[0]).toBeLessThan(8 * 1024 * 1024);
      }
      expect(acceptedOf(game).map((i) => i.bt).sort()).toEqual([0, 1]);
      expect(standIn.requests.filter((r) => r.appId === game.appId).length).toBeGreaterThanOrEqual(2);
    });
  }

  it('re-times and resends items answered 3005, once accepted never again', async () => {
    const game = await createNppaGame(t, standIn);
    const si = nppaSessionId(game.gameId, 's-3005');
    let refused = 0;
    standIn.itemFault = (item, appId) => (appId === game.appId && item.si === si && item.bt === 1 && refused++ === 0 ? { errcode: 3005, errmsg: 'bad time' } : null);
    await enter(t, game, 'p1', 's-3005');
    await leave(t, game, 'p1', 's-3005');
    await waitFor(uploaded(game, 2), 'uploaded after re-timing');
    expect(refused).toBeGreaterThanOrEqual(2);
    const got = acceptedOf(game);
    expect(got.filter((i) => i.bt === 1)).toHaveLength(1);
    expect(got.filter((i) => i.bt === 0)).toHaveLength(1);
    const login = (await events(game)).data.find((e) => e.bt === 1);
    expect(login.attempts).toBe(2);
    // re-timed: sent a little earlier than recorded, the original time kept
    expect(login.sent_ot).toBeLessThan(Math.floor(login.ot / 1000));
  });

  it('counts re-times apart from system-error retries: re-times an item refused 1001 five times, gives up after 5 re-times', async () => {
    const game = await createNppaGame(t, standIn);
    const si = nppaSessionId(game.gameId, 's-sys-3005');
    standIn.hold.set(game.appId, { errcode: 1001, errmsg: 'down' });
    await enter(t, game, 'p1', 's-sys-3005');
    await waitFor(async () => (await events(game, 'pending')).data[0]?.attempts >= 5, 'five system errors');
    const refusedOts: number[] = [];
    standIn.itemFault = (item, appId) => {
      if (appId !== game.appId || item.si !== si) return null;
      refusedOts.push(item.ot);
      return { errcode: 3005, errmsg: 'bad time' };
    };
    standIn.hold.delete(game.appId);
    await waitFor(async () => (await events(game)).counts.failed === 1, 'given up');
    // The first 3005 and one for each of the 5 re-timed sends, each 5 s further back.
    expect(refusedOts).toHaveLength(6);
    expect(refusedOts.map((ot) => (refusedOts[0] as number) - ot)).toEqual([0, 5, 10, 15, 20, 25]);
    expect((await events(game, 'failed')).data[0]).toMatchObject({ status: 'failed', errcode: 3005 });
  });

  for (const [name, answer] of [
    ['3001 (partial failure) with no results', { errcode: 3001, errmsg: 'partial failure', data: null }],
    ['3001 (partial failure) with results that name no item', { errcode: 3001, errmsg: 'partial failure', data: { results: [{ no: '1', errcode: '3005' }, { no: 99, errcode: 3005 }] } }],
    ['an undocumented behaviour code (3099)', { errcode: 3099, errmsg: 'new rule' }],
    ['an undocumented code (4001)', { errcode: 4001, errmsg: 'something else' }],
  ] as const) {
    it(`retries the batch after ${name}, marking nothing uploaded or failed`, async () => {
      const game = await createNppaGame(t, standIn);
      standIn.hold.set(game.appId, answer);
      await enter(t, game, 'p1', 's1');
      await leave(t, game, 'p1', 's1');
      await waitFor(async () => {
        const ev = await events(game);
        return ev.counts.pending !== 2 || ev.data.every((e) => e.attempts >= 1 && e.errcode === answer.errcode);
      }, 'the answer recorded');
      expect((await events(game)).counts).toMatchObject({ pending: 2, uploaded: 0, failed: 0 });
      standIn.hold.delete(game.appId);
      await waitFor(uploaded(game, 2), 'uploaded after retry');
      expect(acceptedOf(game).map((i) => i.bt).sort()).toEqual([0, 1]);
    });
  }

  it('marks items with other per-item errors failed and shows them to the operator', async () => {
    const game = await createNppaGame(t, standIn);
    const bad = nppaSessionId(game.gameId, 's-bad');
    standIn.itemFault = (item, appId) => (appId === game.appId && item.si === bad ? { errcode: 3010, errmsg: 'pi invalid' } : null);
    await enter(t, game, 'p1', 's-bad');
    await enter(t, game, 'p2', 's-good');
    await waitFor(async () => {
      const c = (await events(game)).counts;
      return c.failed === 1 && c.uploaded === 1;
    }, 'one failed, one uploaded');
    const failed = await events(game, 'failed');
    expect(failed.data).toHaveLength(1);
    expect(failed.data[0]).toMatchObject({ session_id: 's-bad', si: bad, status: 'failed', errcode: 3010, last_error: '3010 pi invalid' });
    // not retried: the stand-in saw the failed item exactly once
    const seen = standIn.requests.flatMap((r) => r.items).filter((i) => i.si === bad);
    expect(seen).toHaveLength(1);
  });

  it('skips pending events when the game\'s credentials are removed', async () => {
    const game = await createNppaGame(t, standIn);
    standIn.hold.set(game.appId, { errcode: 1001, errmsg: 'down' });
    await enter(t, game, 'p1', 's1');
    await waitFor(() => standIn.requests.some((r) => r.appId === game.appId), 'a refused request');
    expect((await admin(t, 'PATCH', `/admin/v1/games/${game.gameId}`, { nppa: null })).status).toBe(200);
    await waitFor(async () => (await events(game)).counts.skipped === 1, 'skipped');
    await enter(t, game, 'p1', 's2'); // no credentials: no behaviour event at all
    expect((await events(game)).data).toHaveLength(1);
    standIn.hold.delete(game.appId);
  });

  it('uploads a burst of thousands of events, none lost or duplicated, at most 10 requests per second', async () => {
    // The burst is about the upload, not the game's request limit: 16 callers on a fast machine
    // exceed the default 1,000 requests a second.
    const game = await createNppaGame(t, standIn, { rateLimitPerSecond: 100_000 });
    const sessions = Array.from({ length: 1250 }, (_, i) => i);
    await pool(sessions, 16, async (i) => {
      await enter(t, game, `p${i % 300}`, `burst-${i}`);
      await leave(t, game, `p${i % 300}`, `burst-${i}`);
    });
    await waitFor(uploaded(game, 2500), '2500 uploaded events', 120_000);
    const got = acceptedOf(game);
    expect(got).toHaveLength(2500);
    const keys = new Set(got.map((i) => `${i.si}/${i.bt}`));
    expect(keys.size).toBe(2500);
    for (const i of sessions) {
      expect(keys.has(`${nppaSessionId(game.gameId, `burst-${i}`)}/1`)).toBe(true);
      expect(keys.has(`${nppaSessionId(game.gameId, `burst-${i}`)}/0`)).toBe(true);
    }
    const reqs = standIn.requests.filter((r) => r.appId === game.appId);
    expect(reqs.every((r) => r.items.length >= 1 && r.items.length <= 128)).toBe(true);
    expect(maxPerSecond(standIn.requests, game.appId)).toBeLessThanOrEqual(10);
    expect(standIn.violations).toEqual([]);
  });

  it('lists a game\'s events with paging and checks the query at each bound', async () => {
    const game = await createNppaGame(t, standIn);
    for (let i = 0; i < 3; i++) await enter(t, game, 'p', `list-${i}`);
    await waitFor(uploaded(game, 3), 'uploaded');
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.counts).toEqual({ pending: 0, uploaded: 3, failed: 0, skipped: 0 });
      ids.push(...r.body.data.map((e: any) => e.event_id));
      cursor = r.body.next_cursor;
    } while (cursor);
    expect(ids).toHaveLength(3);
    expect([...ids].sort().reverse()).toEqual(ids);
    for (const [q, status] of [
      ['limit=0', 400],
      ['limit=1', 200],
      ['limit=200', 200],
      ['limit=201', 400],
      ['status=bogus', 400],
      ['status=failed', 200],
      // The cursor is an event id: garbage, or another listing's cursor, is refused.
      ['cursor=%25%25%25', 400],
      ['cursor=ntf_0000000000000abcd', 400],
      [`cursor=${ids[0]}`, 200],
    ] as const) {
      expect([q, (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events?${q}`)).status]).toEqual([q, status]);
    }
    const bogus = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/nppa/events?status=bogus`);
    expect(bogus.body.message).toBe('querystring parameter status must be one of pending, uploaded, failed, skipped');
    expect((await admin(t, 'GET', '/admin/v1/games/nope/nppa/events')).status).toBe(404);
  });
});

// A game that always has an event due would keep its place for ever; with more such games than
// places (NPPA_CONCURRENCY) the others would never be uploaded.
describe('national-system upload with more games than places', () => {
  let one: TestService;
  beforeAll(async () => {
    one = await startService({ env: { NPPA_BASE_URL: standIn.url, NPPA_POLL_INTERVAL_MS: '20', NPPA_RETRY_BASE_MS: '50', NPPA_CONCURRENCY: '1' } });
  });
  afterAll(async () => {
    standIn.beforeAnswer = null;
    await one?.stop();
  });

  it('a game that never runs dry gives up its place to a waiting game after a turn of 10 requests', async () => {
    const busy = await createNppaGame(one, standIn);
    const quiet = await createNppaGame(one, standIn);
    let n = 0;
    // Each of the busy game's requests is answered only once a new event of it is due.
    standIn.beforeAnswer = async (appId) => {
      if (appId === busy.appId) await enter(one, busy, `p${n}`, `busy-${n++}`);
    };
    await enter(one, busy, 'first', 'busy-first');
    await waitFor(() => standIn.requests.some((r) => r.appId === busy.appId), 'the busy game uploading');
    await enter(one, quiet, 'q1', 'quiet-1');
    await waitFor(() => acceptedOf(quiet).length === 1, "the quiet game's event uploaded");
    expect(standIn.requests.filter((r) => r.appId === busy.appId).length).toBeGreaterThanOrEqual(10);
    standIn.beforeAnswer = null;
    const counts = async () => (await admin(one, 'GET', `/admin/v1/games/${busy.gameId}/nppa/events`)).body.counts;
    await waitFor(async () => (await counts()).pending === 0, "the busy game's events uploaded");
    expect(await counts()).toMatchObject({ uploaded: n + 1, failed: 0, skipped: 0 });
    expect(standIn.violations).toEqual([]);
  });
});

describe('ComplianceStore.dueGames on a real database', () => {
  it('lists due games in id order from a cursor, so a round can walk more games than one page holds', async () => {
    const tdb = await createTestDatabase();
    const database = openDatabase(tdb.url);
    try {
      await migrateToLatest(database);
      const store = new ComplianceStore(database);
      const event = (gameId: string, i: number, over: Record<string, unknown> = {}) => ({
        event_id: `nev_${gameId}_${i}`, game_id: gameId, session_id: `s${i}`, combo_id: 'p', bt: 1, ot_ms: 1000 + i,
        status: 'pending' as const, attempts: 0, next_attempt_at: 0, last_error: null, created_at: 1000, uploaded_at: null,
        locked_until: 0, locked_by: null, sent_ot: null, sent_pi: null, errcode: null, retime: 0, ...over,
      });
      await database.db.insertInto('nppa_events').values([
        event('g-c', 1), event('g-a', 2), event('g-a', 3), event('g-b', 4), event('g-d', 5),
        event('g-e', 6, { status: 'uploaded' }), event('g-f', 7, { locked_until: 5000 }),
      ]).execute();
      expect(await store.dueGames(2000, 2)).toEqual(['g-a', 'g-b']);
      expect(await store.dueGames(2000, 2, 'g-b')).toEqual(['g-c', 'g-d']);
      expect(await store.dueGames(2000, 2, 'g-d')).toEqual([]);
      expect(await store.dueGames(6000, 10, 'g-d')).toEqual(['g-f']);
    } finally {
      await database.close();
      await tdb.drop();
    }
  });
});
