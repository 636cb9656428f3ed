import type { DomainMetrics } from '../observability/metrics.js';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { GameSnapshot } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import { nppaDeviceId, nppaSessionId } from './identity.js';
import { itemResults, NppaTransportError, type BehaviourItem, type NppaAnswer, type NppaClient, type NppaCredentials } from './nppa-client.js';
import type { ComplianceStore, NppaEventRow } from './store.js';

/** nppa.md: 1..128 items per request. */
export const MAX_BATCH = 128;
/** nppa.md: the earliest `ot` must be less than 180 s before `timestamps`; keep a margin. */
const MAX_AGE_MS = 170_000;
/**
 * nppa.md: 10 requests per second per game. A game's requests go one at a time, and a request
 * starts at least a second (plus a margin) after the one ten before it *completed*: the
 * national system received that one before answering, so no second of its clock sees 11.
 */
const MAX_REQUESTS = 10;
const RATE_WINDOW_MS = 1020;
/** Items answered 3005 (bad time) this many times are given up and shown to the operator. */
const MAX_RETIMES = 5;
const LOCK_MS = 60_000;
const LEASE_MS = 30_000;

export interface UploaderOptions {
  store: ComplianceStore;
  client: NppaClient;
  games: (gameId: string) => Promise<GameSnapshot | null>;
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

/** The batch to send: its events in `no` order and the shift applied to their times. */
interface Batch {
  events: NppaEventRow[];
  shiftMs: number;
  items: BehaviourItem[];
}

/**
 * Background job that uploads behaviour events (nppa_events) to the national system
 * (nppa.md). Per game: one process at a time (a lease), at most 10 requests per second,
 * batches of at most 128 items spanning less than 180 s. An event is marked uploaded, in one
 * transaction, only after the national system accepted it; claims (locked_until/locked_by)
 * keep several processes from sending the same event.
 */
export class NppaUploader {
  readonly owner = `upl_${randomBytes(6).toString('hex')}`;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private readonly active = new Map<string, Promise<void>>();
  private readonly sendTimes = new Map<string, number[]>();
  private readonly pausedUntil = new Map<string, number>();
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
  }

  /** One scheduling round: start a worker for each game with due events. */
  async tick(): Promise<void> {
    try {
      const now = this.o.clock.now();
      const games = await this.o.store.dueGames(now, 200);
      for (const gameId of games) {
        if (this.stopping || this.active.size >= (this.o.concurrency ?? 16)) break;
        if (this.active.has(gameId) || (this.pausedUntil.get(gameId) ?? 0) > now) continue;
        const run = this.runGame(gameId).finally(() => this.active.delete(gameId));
        this.active.set(gameId, run);
      }
    } catch (err) {
      this.o.logger.error({ err }, 'national-system upload round failed');
    }
  }

  /** Uploads one game's due events until none are left, an attempt fails, or the job stops. */
  private async runGame(gameId: string): Promise<void> {
    const { store, clock } = this.o;
    try {
      while (!this.stopping) {
        const now = clock.now();
        if (!(await store.acquireLease(gameId, this.owner, now, now + LEASE_MS))) return;
        const snap = await this.o.games(gameId);
        const creds = credentialsOf(snap);
        if (!creds) return await store.skipPending(gameId, now);
        const events = await this.claimBatch(gameId, now);
        if (events.length === 0) return;
        if (!(await this.send(gameId, creds, events))) return;
      }
    } catch (err) {
      this.o.logger.error({ err, gameId }, 'national-system upload failed');
    } finally {
      await store.releaseLease(gameId, this.owner).catch(() => {});
    }
  }

  /** Up to 128 due events whose times span less than the 180 s window, claimed by this process. */
  private async claimBatch(gameId: string, now: number): Promise<NppaEventRow[]> {
    const due = await this.o.store.dueEvents(gameId, now, MAX_BATCH);
    if (due.length === 0) return [];
    const first = due[0] as NppaEventRow;
    const fits = due.filter((e) => e.ot_ms - first.ot_ms <= MAX_AGE_MS);
    const got = await this.o.store.claim(
      fits.map((e) => e.event_id),
      this.owner,
      now,
      now + LOCK_MS,
    );
    return fits.filter((e) => got.has(e.event_id));
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
  private async send(gameId: string, creds: NppaCredentials, events: NppaEventRow[]): Promise<boolean> {
    const { store, clock } = this.o;
    await this.rateLimit(gameId);
    const ts = clock.now();
    const pis = await store.playerPis(store.db, gameId, [...new Set(events.map((e) => e.combo_id))]);
    const batch = buildBatch(gameId, events, pis, ts);
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
    if (answer.errcode === 0 || answer.errcode === 3001) {
      await this.settle(events, batch, itemResults(answer));
      return true;
    }
    if (answer.errcode > 3000) {
      // A batch-level behaviour code applies to every item of the batch.
      const all = batch.items.map((i) => ({ no: i.no, errcode: answer.errcode, errmsg: answer.errmsg }));
      await this.settle(events, batch, all);
      return true;
    }
    if (answer.errcode === 1006) this.pausedUntil.set(gameId, clock.now() + this.o.rateLimitPauseMs);
    await this.retryLater(gameId, events, answer.errcode, `${answer.errcode} ${answer.errmsg}`);
    return false;
  }

  /** System error (or no answer): the whole batch goes back to the queue with back-off. */
  private async retryLater(gameId: string, events: NppaEventRow[], errcode: number | null, error: string): Promise<void> {
    const now = this.o.clock.now();
    const attempts = Math.max(...events.map((e) => e.attempts));
    const backoff = errcode === 1006 ? this.o.rateLimitPauseMs : Math.min(this.o.retryBaseMs * 2 ** Math.min(attempts, 16), 60_000);
    this.o.logger.warn({ gameId, errcode, error, items: events.length }, 'national-system upload will be retried');
    await this.o.store.reschedule(
      this.o.store.db,
      events.map((e) => e.event_id),
      this.owner,
      { nextAttemptAt: now + backoff, errcode, error },
    );
  }

  /** Accepted items -> uploaded; 3005 -> re-timed retry; other item errors -> failed. One transaction. */
  private async settle(events: NppaEventRow[], batch: Batch, failures: { no: number; errcode: number; errmsg: string }[]): Promise<void> {
    const { store, clock } = this.o;
    const now = clock.now();
    const byNo = new Map(failures.map((f) => [f.no, f]));
    const accepted: string[] = [];
    const retime: string[] = [];
    const failed = new Map<string, { errcode: number; error: string }>();
    events.forEach((e, i) => {
      const f = byNo.get(i + 1);
      if (!f) accepted.push(e.event_id);
      else if (f.errcode === 3005 && e.attempts + 1 < MAX_RETIMES) retime.push(e.event_id);
      else failed.set(e.event_id, { errcode: f.errcode, error: `${f.errcode} ${f.errmsg}` });
    });
    await store.transaction(async (trx) => {
      await store.markUploaded(trx, accepted, this.owner, batch.shiftMs, now);
      await store.reschedule(trx, retime, this.owner, { nextAttemptAt: now, errcode: 3005, error: '3005 bad time: re-timed and sent again', retime: true });
      for (const [id, f] of failed) await store.markFailed(trx, [id], this.owner, f.errcode, f.error);
    });
    if (failed.size) this.o.logger.warn({ gameId: events[0]?.game_id, failed: failed.size }, 'national system refused behaviour items');
  }
}

function credentialsOf(snap: GameSnapshot | null): NppaCredentials | null {
  const g = snap?.game;
  if (!g?.nppa_app_id || !g.nppa_biz_id || !snap?.nppaSecret) return null;
  return { appId: g.nppa_app_id, bizId: g.nppa_biz_id, secretKey: snap.nppaSecret };
}

/**
 * The items of a batch. Times stay as recorded when they fit the national system's window
 * (earliest less than 180 s before `timestamps`, latest not after it). Otherwise the whole batch
 * is shifted by one delay (order and intervals kept): old items by the least delay that brings
 * the earliest inside the window (so they stay as early, and as ordered against the next
 * batches, as possible); items from the future back to `timestamps`. Items answered 3005 are
 * moved 5 s further into the past. The delay is whole seconds, rounded towards the past.
 */
export function buildBatch(gameId: string, events: NppaEventRow[], pis: Map<string, string>, ts: number): Batch {
  const earliest = Math.min(...events.map((e) => e.ot_ms));
  const latest = Math.max(...events.map((e) => e.ot_ms));
  let shiftMs = 0;
  if (latest > ts) shiftMs = ts - latest;
  else if (earliest < ts - MAX_AGE_MS) shiftMs = ts - MAX_AGE_MS - earliest;
  if (events.some((e) => e.retime === 1)) shiftMs -= 5000;
  // Whole seconds, so intervals in `ot` seconds stay exactly as recorded.
  shiftMs = Math.floor(shiftMs / 1000) * 1000;
  const items = events.map((e, i): BehaviourItem => {
    const pi = pis.get(e.combo_id);
    const base = { no: i + 1, si: nppaSessionId(gameId, e.session_id), bt: e.bt === 1 ? 1 : 0, ot: Math.floor((e.ot_ms + shiftMs) / 1000) } as const;
    return pi ? { ...base, ct: 0, pi } : { ...base, ct: 2, di: nppaDeviceId(e.combo_id) };
  });
  return { events, shiftMs, items };
}
