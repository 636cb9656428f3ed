import type { DomainMetrics } from '../observability/metrics.js';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { GameSnapshot } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import { itemResults, NppaTransportError, type BehaviourItem, type NppaAnswer, type NppaClient, type NppaCredentials } from './nppa-client.js';
import type { ComplianceStore, NppaEventRow, NppaLeaseRow } from './store.js';
import { buildBatch, MAX_BATCH, sendable, type Batch, type GameState } from './upload-batch.js';

/**
 * nppa.md: 10 requests per second per game. A game's requests go one at a time, and a request
 * starts at least a second (plus a margin) after the one ten before it *completed*: the
 * national system received that one before answering, so no second of its clock sees 11.
 */
const MAX_REQUESTS = 10;
const RATE_WINDOW_MS = 1020;
/**
 * Items answered 3005 (bad time) are re-timed and sent again this many times (counted apart
 * from system-error retries); a 3005 for the last re-timed send gives the item up.
 */
const MAX_RETIMES = 5;
/**
 * nppa.md's behaviour codes that refuse a whole batch: applied to every item. 3001 (partial
 * failure) names its items in data.results. Any other code (system codes, codes nppa.md does
 * not list) says nothing about the items: the batch is sent again after a back-off.
 */
const BATCH_CODES = new Set([3002, 3003, 3004, 3005, 3006, 3007, 3008, 3009, 3010]);
const LOCK_MS = 60_000;
const LEASE_MS = 30_000;
/** Requests a game sends in one turn while other games wait for a place (a second's worth). */
const TURN_REQUESTS = 10;
/** Games listed per scheduling round. */
const LIST_GAMES = 200;

export interface UploaderOptions {
  store: ComplianceStore;
  client: NppaClient;
  games: (gameId: string) => Promise<GameSnapshot | null>;
  /** The game as stored now, past any cache: skipping a game's events is for good. */
  storedGame: (gameId: string) => Promise<GameSnapshot | null>;
  clock: Clock;
  logger: Logger;
  /** `{NPPA_BASE_URL}`; the uploader posts to `{base}/behavior/collection/loginout`. */
  baseUrl: string;
  pollIntervalMs: number;
  /** First back-off after a system error; doubles per attempt up to a minute. */
  retryBaseMs: number;
  /** Pause of a game after 1006 (over the rate limit: the national system blocks for a minute). */
  rateLimitPauseMs: number;
  /** Games uploaded in parallel by this process. */
  concurrency?: number;
  /** Counts upload batches for /metrics (src/observability). */
  metrics?: Pick<DomainMetrics, 'nppaUpload'>;
}

/**
 * Background job that uploads behaviour events (nppa_events) to the national system
 * (nppa.md). Per game: one process at a time (a lease), at most 10 requests per second,
 * batches of at most 128 items spanning less than 180 s. An event is marked uploaded, in one
 * transaction, only after the national system accepted it; claims (locked_until/locked_by)
 * keep several processes from sending the same event.
 *
 * Order. A game's pending events are one queue in recorded order (ot_ms, event_id): a batch
 * is always taken from its head, whatever back-off an event had, and a failed request pauses
 * the whole game (nppa_leases.paused_until), not its events, so a later event never overtakes
 * an earlier pending one. A backlog too old for the national system's window is sent with one
 * delay (nppa_leases.shift_ms) for all of it: each item goes once its shifted time has come,
 * so the shifted times keep the recorded order and nearly the intervals (a session's logout
 * never lands before its login; no item before the latest `ot` reported, last_ot). Per-batch
 * shifts did not: the next batch's items were shifted less than the ones before them. The
 * delay shrinks slowly (CATCH_UP) so that a game that is never quiet catches up, grows on a
 * new outage in the middle of a backlog, and goes back to none when the backlog has drained.
 */
export class NppaUploader {
  readonly owner = `upl_${randomBytes(6).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private readonly active = new Map<string, Promise<void>>();
  private readonly sendTimes = new Map<string, number[]>();
  /** When this process last ended a turn of each game: the longest-waiting go first. */
  private readonly lastTurn = new Map<string, number>();
  /** Due games the last round found no place for; while any, turns are bounded. */
  private waiting = 0;
  /** Where the next round's listing starts (game ids in order, wrapping). */
  private listFrom = '';
  private stopping = false;

  constructor(private readonly o: UploaderOptions) {}

  start(): void {
    if (this.timer) return;
    this.stopping = false;
    this.timer = setInterval(() => {
      this.ticking ??= this.tick().finally(() => {
        this.ticking = null;
      });
    }, this.o.pollIntervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
    await Promise.all(this.active.values());
    await this.o.store.releaseLeases(this.owner).catch((err: unknown) => this.o.logger.warn({ err }, 'national-system upload leases not given back; they run out in 30 s'));
  }

  /**
   * One scheduling round: a worker for each game with due events, as places allow. Fair to
   * every game: the listing walks all game ids a page at a time, the games this process served
   * longest ago go first, and while some wait a game's turn ends after TURN_REQUESTS requests
   * (a busy game would otherwise keep its place for ever: it always has an event due).
   */
  async tick(): Promise<void> {
    try {
      const now = this.o.clock.now();
      const listed = await this.o.store.dueGames(now, LIST_GAMES, this.listFrom);
      this.listFrom = listed.length < LIST_GAMES ? '' : (listed[listed.length - 1] as string);
      // Paused games (1006, back-off) are not listed: the pause is in the database.
      const games = listed.filter((g) => !this.active.has(g)).sort((a, b) => (this.lastTurn.get(a) ?? 0) - (this.lastTurn.get(b) ?? 0));
      const places = Math.max(0, (this.o.concurrency ?? 16) - this.active.size);
      this.waiting = Math.max(0, games.length - places);
      for (const gameId of games.slice(0, places)) {
        if (this.stopping) break;
        const run = this.runGame(gameId).finally(() => {
          this.active.delete(gameId);
          this.lastTurn.set(gameId, performance.now());
        });
        this.active.set(gameId, run);
      }
      if (this.lastTurn.size > 10 * LIST_GAMES) this.forgetOldTurns();
    } catch (err) {
      this.o.logger.error({ err }, 'national-system upload round failed');
    }
  }

  /** Keeps the turn record from growing with every game ever served: the oldest half goes. */
  private forgetOldTurns(): void {
    const byAge = [...this.lastTurn].sort((a, b) => a[1] - b[1]);
    for (const [gameId] of byAge.slice(0, byAge.length >> 1)) this.lastTurn.delete(gameId);
  }

  /**
   * Uploads one game's due events until none are left, an attempt fails, the job stops, or its
   * turn ends while other games wait.
   */
  private async runGame(gameId: string): Promise<void> {
    const { store, clock } = this.o;
    try {
      for (let sent = 0; !this.stopping; sent++) {
        if (sent >= TURN_REQUESTS && this.waiting > 0) return; // other games' turn
        const now = clock.now();
        const lease = await store.acquireLease(gameId, this.owner, now, now + LEASE_MS);
        if (!lease) return;
        let creds = credentialsOf(await this.o.games(gameId));
        // This process's snapshot may be up to 5 s old, from before credentials were set through
        // another one: the events are skipped only if the stored game has none.
        creds ??= credentialsOf(await this.o.storedGame(gameId));
        if (!creds) return await store.skipPending(gameId, now);
        const events = await this.claimBatch(gameId, lease, now);
        if (events.length === 0) return;
        if (!(await this.send(gameId, creds, lease, events))) return;
      }
    } catch (err) {
      this.o.logger.error({ err, gameId }, 'national-system upload failed');
    }
    // The lease is kept (until it runs out, LEASE_MS after the last batch) rather than given
    // back: the 10 requests a second are counted in this process, and another process taking
    // the game a moment after this one's last requests would add its own ten. Given back on
    // stop (stop()), so that another instance takes over at once.
  }

  /**
   * The next batch from the head of the game's queue, claimed by this process. Nothing when the
   * queue is empty (the backlog's shift ends), or when its head may not go yet: the game then
   * pauses until it may.
   */
  private async claimBatch(gameId: string, lease: NppaLeaseRow, now: number): Promise<NppaEventRow[]> {
    const { store } = this.o;
    const backlog = await store.backlog(gameId, MAX_BATCH);
    if (backlog.length === 0) {
      if (lease.shift_ms !== 0) await store.saveProgress(store.db, gameId, this.owner, { shiftMs: 0, shiftAt: now, lastOt: lease.last_ot });
      return [];
    }
    const { events, wakeAt } = sendable(backlog, lease, now);
    if (events.length === 0) {
      await store.pauseGame(store.db, gameId, this.owner, wakeAt);
      return [];
    }
    const got = await store.claim(
      events.map((e) => e.event_id),
      this.owner,
      now,
      now + LOCK_MS,
    );
    // Only an unbroken run from the head: an event claimed elsewhere holds back the ones after it.
    const run = events.findIndex((e) => !got.has(e.event_id));
    if (run === -1) return events;
    await store.unclaim(
      events.slice(run).map((e) => e.event_id),
      this.owner,
    );
    return events.slice(0, run);
  }

  /** Waits until one more request keeps this game within 10 requests per second. */
  private async rateLimit(gameId: string): Promise<void> {
    const times = this.sendTimes.get(gameId) ?? [];
    if (times.length < MAX_REQUESTS) return;
    const wait = (times[times.length - MAX_REQUESTS] as number) + RATE_WINDOW_MS - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }

  /** Records the completion of a request (answered or failed). */
  private requestDone(gameId: string): void {
    const times = this.sendTimes.get(gameId) ?? [];
    this.sendTimes.set(gameId, times);
    times.push(performance.now());
    if (times.length > MAX_REQUESTS) times.splice(0, times.length - MAX_REQUESTS);
  }

  /** Sends one batch and records the outcome; true when the game may continue right away. */
  private async send(gameId: string, creds: NppaCredentials, state: GameState, events: NppaEventRow[]): Promise<boolean> {
    const { store } = this.o;
    await this.rateLimit(gameId);
    const ts = this.o.clock.now();
    const pis = await store.playerPis(store.db, gameId, [...new Set(events.map((e) => e.combo_id))]);
    const logins = await store.loginIdentities(store.db, gameId, events.filter((e) => e.bt === 0).map((e) => e.session_id));
    const batch = buildBatch(gameId, events, pis, ts, state, logins);
    let answer: NppaAnswer;
    try {
      answer = await this.o.client.sendBehaviour(`${this.o.baseUrl}/behavior/collection/loginout`, creds, batch.items, ts);
    } catch (e) {
      if (!(e instanceof NppaTransportError)) throw e;
      this.o.metrics?.nppaUpload('failure', events.length);
      await this.retryLater(gameId, events, null, e.message);
      return false;
    } finally {
      this.requestDone(gameId);
    }
    this.o.metrics?.nppaUpload(answer.errcode === 0 ? 'success' : 'failure', events.length);
    // Per-item results name items of this batch; anything else in them cannot be applied.
    const results = itemResults(answer).filter((r) => r.no >= 1 && r.no <= batch.items.length);
    if (answer.errcode === 0 || (answer.errcode === 3001 && results.length > 0)) {
      await this.settle(gameId, state, batch, results);
      return true;
    }
    if (BATCH_CODES.has(answer.errcode)) {
      // A batch-level behaviour code applies to every item of the batch.
      const all = batch.items.map((i) => ({ no: i.no, errcode: answer.errcode, errmsg: answer.errmsg }));
      await this.settle(gameId, state, batch, all);
      return true;
    }
    // System codes, a 3001 that names no item of the batch, codes nppa.md does not list: the
    // answer says nothing reliable about the items, so none is taken as accepted or refused.
    await this.retryLater(gameId, events, answer.errcode, `${answer.errcode} ${answer.errmsg}`);
    return false;
  }

  /**
   * System error (or no answer): the batch goes back to the head of the queue and the game
   * pauses for the back-off (1006: the national system's block), in the database, so no
   * process sends anything of the game before then. The events' next_attempt_at shows it.
   */
  private async retryLater(gameId: string, events: NppaEventRow[], errcode: number | null, error: string): Promise<void> {
    const { store } = this.o;
    const now = this.o.clock.now();
    const attempts = Math.max(...events.map((e) => e.attempts));
    const backoff = errcode === 1006 ? this.o.rateLimitPauseMs : Math.min(this.o.retryBaseMs * 2 ** Math.min(attempts, 16), 60_000);
    this.o.logger.warn({ gameId, errcode, error, items: events.length }, 'national-system upload will be retried');
    await store.transaction(async (trx) => {
      await store.pauseGame(trx, gameId, this.owner, now + backoff);
      await store.reschedule(
        trx,
        events.map((e) => e.event_id),
        this.owner,
        { nextAttemptAt: now + backoff, errcode, error },
      );
    });
  }

  /**
   * Accepted items -> uploaded; 3005 -> re-timed retry (at most MAX_RETIMES re-times, counted
   * apart from system-error retries); other item errors -> failed. With the backlog's shift and
   * the latest accepted `ot`, in one transaction.
   */
  private async settle(gameId: string, state: GameState, batch: Batch, failures: { no: number; errcode: number; errmsg: string }[]): Promise<void> {
    const { store, clock } = this.o;
    const now = clock.now();
    const byNo = new Map(failures.map((f) => [f.no, f]));
    // By the shift and identity each item was sent with.
    const accepted = new Map<string, { sent: { shiftMs: number; pi: string }; ids: string[] }>();
    const retime: string[] = [];
    const failed = new Map<string, { errcode: number; error: string }>();
    let lastOt = state.last_ot;
    batch.events.forEach((e, i) => {
      const f = byNo.get(i + 1);
      if (!f) {
        const item = batch.items[i] as BehaviourItem;
        const sent = { shiftMs: batch.shifts[i] as number, pi: item.ct === 0 ? (item.pi as string) : '' };
        const key = `${sent.shiftMs}\n${sent.pi}`;
        const group = accepted.get(key) ?? { sent, ids: [] };
        group.ids.push(e.event_id);
        accepted.set(key, group);
        lastOt = Math.max(lastOt, (batch.items[i] as BehaviourItem).ot);
      } else if (f.errcode === 3005 && e.retime < MAX_RETIMES) retime.push(e.event_id);
      else failed.set(e.event_id, { errcode: f.errcode, error: `${f.errcode} ${f.errmsg}` });
    });
    await store.transaction(async (trx) => {
      for (const { sent, ids } of accepted.values()) await store.markUploaded(trx, ids, this.owner, sent, now);
      await store.reschedule(trx, retime, this.owner, { nextAttemptAt: now, errcode: 3005, error: '3005 bad time: re-timed and sent again', retime: true });
      for (const [id, f] of failed) await store.markFailed(trx, [id], this.owner, f.errcode, f.error);
      await store.saveProgress(trx, gameId, this.owner, { shiftMs: batch.keptMs, shiftAt: batch.ts, lastOt });
    });
    if (failed.size) this.o.logger.warn({ gameId, failed: failed.size }, 'national system refused behaviour items');
  }
}

function credentialsOf(snap: GameSnapshot | null): NppaCredentials | null {
  const g = snap?.game;
  if (!g?.nppa_app_id || !g.nppa_biz_id || !snap?.nppaSecret) return null;
  return { appId: g.nppa_app_id, bizId: g.nppa_biz_id, secretKey: snap.nppaSecret };
}
