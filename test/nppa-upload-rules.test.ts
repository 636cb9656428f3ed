import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GameSnapshot } from '../src/games/service.js';
import { nppaSessionId } from '../src/compliance/identity.js';
import { NppaClient } from '../src/compliance/nppa-client.js';
import { ComplianceStore, type NppaEventRow } from '../src/compliance/store.js';
import { NppaUploader } from '../src/compliance/uploader.js';
import { migrateToLatest, openDatabase, type Database } from '../src/db/index.js';
import { ManualClock } from '../src/lib/clock.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { createNppaGame, enter } from './helpers/nppa-game.js';
import { startNppaStandIn, type StandIn } from './helpers/nppa-stand-in.js';
import { admin, startService, type TestService } from './helpers/service.js';
import { waitFor } from './helpers/wait.js';

const events = async (t: TestService, gameId: string) =>
  (await admin(t, 'GET', `/admin/v1/games/${gameId}/nppa/events?limit=200`)).body as { counts: Record<string, number>; data: any[] };

describe('national-system upload: retry back-off and request time-out', () => {
  let standIn: StandIn;
  let t: TestService;
  const clock = new ManualClock(Date.now());
  // Released at the end: answers the stand-in holds back for ever otherwise.
  let releaseHeld: () => void = () => {};
  const held = new Promise<void>((r) => (releaseHeld = r));
  beforeAll(async () => {
    standIn = await startNppaStandIn({ clock });
    t = await startService({ clock, env: { NPPA_BASE_URL: standIn.url, NPPA_POLL_INTERVAL_MS: '20', NPPA_RETRY_BASE_MS: '10000' } });
  });
  afterAll(async () => {
    releaseHeld();
    await t?.stop();
    await standIn?.close();
  });

  // docs/compliance.md "Answers and retries": "the game pauses for a back-off
  // (NPPA_RETRY_BASE_MS doubling per attempt, at most 60 s ...), then the batch is sent again".
  it('after system errors (1001) the game waits NPPA_RETRY_BASE_MS doubling per attempt, at most 60 s, before the batch goes again', async () => {
    const game = await createNppaGame(t, standIn);
    standIn.hold.set(game.appId, { errcode: 1001, errmsg: 'system error' });
    const requests = () => standIn.requests.filter((r) => r.appId === game.appId);
    await enter(t, game, 'p1', 'backoff-1');
    const expected = [10_000, 20_000, 40_000, 60_000, 60_000];
    for (const [i, backoff] of expected.entries()) {
      await waitFor(async () => (await events(t, game.gameId)).data[0]?.attempts === i + 1, `refusal ${i + 1} recorded`);
      // The clock stands still: nothing more is sent until the back-off has passed.
      expect(requests()).toHaveLength(i + 1);
      const ev = (await events(t, game.gameId)).data[0];
      expect([i, ev.errcode, ev.next_attempt_at - clock.now()]).toEqual([i, 1001, backoff]);
      const lease = await t.service.database.db.selectFrom('nppa_leases').selectAll().where('game_id', '=', game.gameId).executeTakeFirstOrThrow();
      expect(Number(lease.paused_until) - clock.now()).toBe(backoff);
      if (i === expected.length - 1) standIn.hold.delete(game.appId); // answered after the last back-off
      clock.advance(backoff);
    }
    await waitFor(async () => (await events(t, game.gameId)).counts.uploaded === 1, 'uploaded once the national system answers');
    // The requests' timestamps are the (manual) clock when each was sent: one back-off apart.
    const ts = requests().map((r) => r.timestamps);
    expect(ts.slice(1).map((x, i) => x - (ts[i] as number))).toEqual(expected);
  });

  // nppa.md: "5 s request timeout"; docs/compliance.md "Wire": "5 s timeout", and a time-out is
  // retried like a system error.
  it('a request the national system never answers fails after 5 s (not later) and is retried like a system error', async () => {
    const game = await createNppaGame(t, standIn);
    standIn.beforeAnswer = async (appId) => {
      if (appId === game.appId) await held;
    };
    try {
      await enter(t, game, 'p1', 'timeout-1');
      const request = (await waitFor(() => standIn.requests.find((r) => r.appId === game.appId), 'the request'))!;
      const failedAt = await waitFor(
        async () => ((await events(t, game.gameId)).data[0]?.attempts === 1 ? performance.now() : 0),
        'the time-out recorded',
        20_000,
      );
      const ev = (await events(t, game.gameId)).data[0];
      expect(ev).toMatchObject({ status: 'pending', errcode: null });
      expect(ev.last_error).toMatch(/^request failed/);
      const elapsed = failedAt - request.at;
      // A timer never fires early; the upper bound is loose for a loaded machine (a 30 s
      // time-out is what it must catch).
      expect(elapsed).toBeGreaterThanOrEqual(4_500);
      expect(elapsed).toBeLessThan(15_000);
    } finally {
      standIn.beforeAnswer = null;
    }
  }, 30_000);
});

describe('nppa-test command when the national system refuses the whole request', () => {
  const SECRETS_KEY = randomBytes(32).toString('base64');
  let standIn: StandIn;
  let t: TestService;
  beforeAll(async () => {
    standIn = await startNppaStandIn();
    t = await startService({ env: { SECRETS_KEY } });
  });
  afterAll(async () => {
    await t?.stop();
    await standIn?.close();
  });

  // docs/compliance.md "Interface test cases": PASS/FAIL with the answer's errcode; exit 0 only
  // when every case passed. A refusal with no per-item results is no pass.
  it('prints FAIL and exits 1 for an answer errcode 1011 with no per-item results', async () => {
    const game = await createNppaGame(t, standIn);
    standIn.queue.push({ errcode: 1011, errmsg: 'identity check failed' });
    const r = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'nppa-test', '--game', game.gameId, '--base-url', standIn.url, '--code', 'TC09', '--case', 'guest'], {
      cwd: path.resolve(import.meta.dirname, '..'),
      env: { ...process.env, DATABASE_URL: t.db.url, SECRETS_KEY },
    }).then(
      (x) => ({ code: 0, stdout: x.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
    );
    expect(standIn.requests.filter((q) => q.appId === game.appId).map((q) => q.answer.errcode)).toEqual([1011]);
    expect([r.code, r.stdout.trim()]).toEqual([1, 'guest: FAIL errcode=1011 errmsg=identity check failed']);
  });
});

/**
 * One uploader (as a service process runs it) on a real database, driven round by round: tick()
 * starts a game's upload, stop() waits for it. Another process is a second owner in the rows.
 */
describe('national-system uploader rounds: claims shared with other processes', () => {
  let standIn: StandIn;
  let tdb: TestDatabase;
  let database: Database;
  let client: NppaClient;
  const creds = { appId: `app${randomBytes(6).toString('hex')}`, bizId: `biz${randomBytes(4).toString('hex')}`, secretKey: randomBytes(16).toString('hex') };
  const GAME = 'g-rules';
  const OTHER = 'upl_otherprocess';
  const snapshot = { game: { game_id: GAME, nppa_app_id: creds.appId, nppa_biz_id: creds.bizId }, nppaSecret: creds.secretKey } as unknown as GameSnapshot;

  beforeAll(async () => {
    standIn = await startNppaStandIn();
    standIn.addApp(creds);
    client = new NppaClient();
  });
  afterAll(async () => {
    await client?.close();
    await standIn?.close();
  });
  beforeEach(async () => {
    tdb = await createTestDatabase();
    database = openDatabase(tdb.url);
    await migrateToLatest(database);
    standIn.beforeAnswer = null;
    standIn.requests.length = 0;
  });
  afterEach(async () => {
    standIn.beforeAnswer = null;
    await database?.close();
    await tdb?.drop();
  });

  function uploader(store: ComplianceStore, clock: ManualClock, withCredentials = true): NppaUploader {
    const snap = async () => (withCredentials ? snapshot : null);
    return new NppaUploader({
      store,
      client,
      games: snap,
      storedGame: snap,
      clock,
      logger: pino({ level: 'silent' }),
      baseUrl: standIn.url,
      pollIntervalMs: 60_000,
      retryBaseMs: 1000,
      rateLimitPauseMs: 1000,
    });
  }
  /** Events #1..#n of GAME, one second apart, the last a second before `now`. */
  async function insertEvents(now: number, n: number, over: Record<number, Partial<NppaEventRow>> = {}): Promise<string[]> {
    const rows = Array.from({ length: n }, (_, k) => ({
      event_id: `nev_rules_${k + 1}`, game_id: GAME, session_id: `s${k + 1}`, combo_id: `p${k + 1}`, bt: 1, ot_ms: now - (n - k) * 1000,
      status: 'pending' as const, attempts: 0, next_attempt_at: 0, last_error: null, created_at: now, uploaded_at: null,
      locked_until: 0, locked_by: null, sent_ot: null, sent_pi: null, errcode: null, retime: 0, ...over[k + 1],
    }));
    await database.db.insertInto('nppa_events').values(rows).execute();
    return rows.map((r) => r.event_id);
  }
  const rows = async () =>
    Object.fromEntries(
      (await database.db.selectFrom('nppa_events').select(['event_id', 'status', 'locked_by', 'locked_until']).where('game_id', '=', GAME).orderBy('event_id').execute()).map((r) => [
        r.event_id,
        { status: r.status, locked_by: r.locked_by, locked_until: Number(r.locked_until) },
      ]),
    );
  const sentSessions = () => standIn.requests.filter((r) => r.appId === creds.appId).map((r) => r.items.map((i) => i.si));
  const si = (k: number) => nppaSessionId(GAME, `s${k}`);

  // docs/compliance.md: "an event claimed by another process holds back the ones after it".
  it('when another process claims an event of the batch first, only the unbroken run before it is sent and the rest is given back', async () => {
    const clock = new ManualClock(Date.now());
    const now = clock.now();
    const [e1, e2, e3] = await insertEvents(now, 3);
    // The other process claims #2 between this one's read of the queue and its claim.
    class RacingStore extends ComplianceStore {
      override async claim(ids: string[], owner: string, at: number, until: number): Promise<Set<string>> {
        expect(await super.claim([e2!], OTHER, at, at + 60_000)).toEqual(new Set([e2]));
        return super.claim(ids, owner, at, until);
      }
    }
    const up = uploader(new RacingStore(database), clock);
    await up.tick();
    await up.stop();
    expect(sentSessions()).toEqual([[si(1)]]);
    expect(await rows()).toEqual({
      [e1!]: { status: 'uploaded', locked_by: null, locked_until: 0 },
      [e2!]: { status: 'pending', locked_by: OTHER, locked_until: now + 60_000 },
      [e3!]: { status: 'pending', locked_by: null, locked_until: 0 },
    });
  });

  // docs/compliance.md: "Events are marked uploaded ... guarded by the claim".
  it('an answer that arrives after another process took over the claim does not mark the event uploaded', async () => {
    const clock = new ManualClock(Date.now());
    const now = clock.now();
    const [e1] = await insertEvents(now, 1);
    // While the request is in flight, this process's claim ran out and another process took the event.
    standIn.beforeAnswer = async () => {
      await database.db.updateTable('nppa_events').set({ locked_by: OTHER, locked_until: now + 120_000 }).where('event_id', '=', e1!).execute();
    };
    const up = uploader(new ComplianceStore(database), clock);
    await up.tick();
    await up.stop();
    expect(sentSessions()).toEqual([[si(1)]]);
    expect(await rows()).toEqual({ [e1!]: { status: 'pending', locked_by: OTHER, locked_until: now + 120_000 } });
  });

  // docs/compliance.md: removing credentials makes the game's pending events skipped; an event
  // another process has claimed is that process's to settle.
  it('a game without credentials has its unclaimed pending events skipped, not one another process has claimed', async () => {
    const clock = new ManualClock(Date.now());
    const now = clock.now();
    const [e1, e2] = await insertEvents(now, 2, { 1: { locked_by: OTHER, locked_until: now + 60_000 } });
    const up = uploader(new ComplianceStore(database), clock, false);
    await up.tick();
    await up.stop();
    expect(sentSessions()).toEqual([]);
    expect(await rows()).toEqual({
      [e1!]: { status: 'pending', locked_by: OTHER, locked_until: now + 60_000 },
      [e2!]: { status: 'skipped', locked_by: null, locked_until: 0 },
    });
  });

  // docs/compliance.md: a process that stops gives its leases back so another takes over at
  // once; it must first finish (and record) the upload in flight.
  it('stop() waits for the upload in flight and records its answer before giving the lease back', async () => {
    const clock = new ManualClock(Date.now());
    const [e1] = await insertEvents(clock.now(), 1);
    let arrived!: () => void;
    const requestArrived = new Promise<void>((r) => (arrived = r));
    let answer!: () => void;
    const answerNow = new Promise<void>((r) => (answer = r));
    standIn.beforeAnswer = async () => {
      arrived();
      await answerNow;
    };
    let leasesGivenBack = 0;
    class WatchedStore extends ComplianceStore {
      override async releaseLeases(owner: string): Promise<void> {
        leasesGivenBack++;
        return super.releaseLeases(owner);
      }
    }
    const up = uploader(new WatchedStore(database), clock);
    let stopping: Promise<unknown> = Promise.resolve();
    try {
      await up.tick();
      await requestArrived;
      let stopped = false;
      stopping = up.stop().then(() => (stopped = true));
      // Let stop() run as far as it goes while the answer is held back.
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setImmediate(r));
      expect([stopped, leasesGivenBack]).toEqual([false, 0]);
    } finally {
      answer();
      await stopping;
    }
    expect(await rows()).toEqual({ [e1!]: { status: 'uploaded', locked_by: null, locked_until: 0 } });
    expect(leasesGivenBack).toBe(1);
    const lease = await database.db.selectFrom('nppa_leases').selectAll().where('game_id', '=', GAME).executeTakeFirstOrThrow();
    expect(Number(lease.expires_at)).toBe(0);
  });
});
