import type { DomainMetrics } from '../observability/metrics.js';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import type { OutboundClient } from '../lib/outbound.js';
import { nextAttemptAt } from './backoff.js';
import { HostLimit } from './host-limit.js';
import { sendNotification, type SendResult } from './sender.js';
import type { AttemptOutcome, NotificationRow, NotificationStore } from './store.js';

export interface DispatcherSettings {
  timeoutMs: number;
  maxAgeMs: number;
  concurrency: number;
  /** The ceiling of each host's adaptive limit (host-limit.ts). */
  perHostConcurrency: number;
  /** Its floor (default 1). */
  perHostMinConcurrency?: number;
  pollIntervalMs: number;
  retryBaseMs: number;
}

/** Where the dispatcher gets a game's current signing key (GameService.snapshot fits). */
export interface SigningKeys {
  snapshot(gameId: string): Promise<{ secrets: string[] } | null>;
}

export interface DispatcherDeps {
  store: NotificationStore;
  keys: SigningKeys;
  outbound: OutboundClient;
  clock: Clock;
  ids: IdGenerator;
  logger: Logger;
  settings: DispatcherSettings;
  random?: () => number;
  /** Counts attempts for /metrics (src/observability). */
  metrics?: Pick<DomainMetrics, 'notificationAttempt'>;
}

interface Claimed {
  n: NotificationRow;
  token: string;
  leaseUntil: number;
}

/**
 * How long past the HTTP time-out a claim stays ours (covers the recording transaction, which
 * takes milliseconds). Short, because it is also how long a notification held by a crashed
 * process waits; should a slow holder overrun it, the worst case is one more delivery of the
 * same notification_id, which receivers dedupe, and the late holder's record is refused.
 */
const LEASE_MARGIN_MS = 10_000;

/**
 * Delivers due notifications (PROTOCOL 5). Polls every pollIntervalMs and wakes at once on
 * kick() (called after a transaction that wrote notifications commits). Several processes may
 * run one each over one database: rows are claimed with a lease, so each attempt is made by
 * one dispatcher, and a crashed dispatcher's rows are retried when the lease runs out.
 * Concurrency is capped in total and per notify_url host (per process), each host's cap
 * adapting to how it answers (HostLimit).
 */
export class NotificationDispatcher {
  private readonly name = `dsp_${randomBytes(6).toString('hex')}`;
  private claims = 0;
  private running = false;
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private again = false;
  private readonly inflight = new Set<Promise<void>>();
  private readonly perHost = new Map<string, number>();
  /** Claimed notifications waiting for a slot of their host (see launch). */
  private readonly waiting = new Map<string, Claimed[]>();
  private queued = 0;
  /** Hosts whose last attempt took half the time-out or more (hanging, or nearly). */
  private readonly slowHosts = new Set<string>();
  /** Attempts in flight to slow hosts: together at most half of NOTIFY_CONCURRENCY. */
  private slowInflight = 0;
  /** Each host's adaptive limit of attempts in flight (host-limit.ts). */
  private readonly limits = new Map<string, HostLimit>();

  /** Free slots that make a claim worth it after an attempt ends (new work claims at once). */
  private readonly claimBatch: number;
  /** The most rows the next claim takes (see tick). */
  private claimSize: number;

  constructor(private readonly d: DispatcherDeps) {
    this.claimBatch = Math.max(1, Math.floor(d.settings.concurrency / 8));
    this.claimSize = d.settings.concurrency;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(0);
  }

  /** Look for due notifications now (new ones were written, or a slot freed up). */
  kick(): void {
    if (!this.running) return;
    if (this.ticking) this.again = true;
    else this.schedule(0);
  }

  /** Stops claiming and waits for attempts in flight (each ends within timeoutMs). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.ticking;
    // Queued claims go back at once, for another instance to take.
    const now = this.d.clock.now();
    for (const [host, queue] of this.waiting) {
      this.waiting.delete(host);
      this.queued -= queue.length;
      await Promise.all(queue.map((c) => this.giveBack(c, now)));
    }
    await Promise.allSettled([...this.inflight]);
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (ms > 0) this.claimSize = Math.max(this.claimSize, this.claimBatch);
      this.ticking = this.tick().finally(() => {
        this.ticking = null;
        if (this.running) this.schedule(this.again ? 0 : this.d.settings.pollIntervalMs);
        this.again = false;
      });
    }, ms);
  }

  private async tick(): Promise<void> {
    const { store, clock, settings, logger } = this.d;
    // Claims waiting in a host's queue are not requests: counted against the total, a slow
    // host's queue (four rounds of its cap) could take the whole budget, and no other host's
    // notification was claimed until the slow one's attempts timed out. They are bounded apart.
    const free = Math.min(settings.concurrency - this.inflight.size, settings.concurrency * 4 - this.queued, this.claimSize);
    if (free <= 0) return;
    const now = clock.now();
    const token = `${this.name}:${++this.claims}`;
    const leaseUntil = now + settings.timeoutMs + LEASE_MARGIN_MS;
    let claimed: NotificationRow[];
    try {
      claimed = await store.claimDue(now, free, leaseUntil, token);
    } catch (e) {
      logger.warn({ err: e }, 'notification claim failed; retrying at the next poll');
      return;
    }
    // Rows given back (their hosts had no room) are not awaited one by one: together.
    const back: Promise<void>[] = [];
    for (const n of claimed) {
      const given = this.launch({ n, token, leaseUntil });
      if (given) back.push(given);
    }
    // A claim larger than the hosts' room only leases rows to give them back: the next claims
    // take what this one could use, and grow again (doubling) once nothing comes back.
    // None at all (every host claimed for is full): no claim until an attempt ends or the next
    // poll, instead of claiming and giving back the same rows at every payment's kick.
    this.claimSize = back.length ? claimed.length - back.length : Math.min(settings.concurrency * 4, this.claimSize * 2);
    // A full batch that all found room means more may be due: look again at once.
    if (claimed.length === free && !back.length) this.again = true;
    await Promise.all(back);
  }

  /**
   * Sends now when the host has a free slot; else waits in the host's queue (keeping its
   * lease) for the next free slot. The queue is short (four rounds of the per-host cap) and
   * does not count against NOTIFY_CONCURRENCY (tick), so one slow host's backlog cannot hold
   * the claims other hosts' notifications wait for: beyond it, the row is given back due now,
   * behind what other hosts have due, and claimed again once the host's queue has room (an
   * attempt of the host ending then kicks a claim, see send). Due later instead, it would wait
   * for a poll even when the host has room. Returns the give-back, when it gives the row back.
   */
  private launch(c: Claimed): Promise<void> | undefined {
    const host = hostOf(c.n.notify_url);
    if (!this.running) return this.giveBack(c, this.d.clock.now());
    if (this.mayStart(host)) return void this.send(c, host);
    // Nothing waits behind a slow host: a queue there would hold claims (and the queue budget
    // of every host, see tick) for a time-out per entry. Due again in about one time-out.
    if (this.slowHosts.has(host)) return this.giveBack(c, this.d.clock.now() + Math.round(this.d.settings.timeoutMs * (0.5 + this.random())));
    const queue = this.waiting.get(host) ?? [];
    if (queue.length < this.hostCap(host) * 4) {
      queue.push(c);
      this.waiting.set(host, queue);
      this.queued++;
      return;
    }
    return this.giveBack(c, this.d.clock.now());
  }

  /**
   * A host that hangs holds a slot for the whole time-out per attempt: such hosts get one
   * attempt in flight each, and half the slots between them, so that a few games whose
   * receivers hang (or one game spreading its notify_urls over many such hosts) cannot hold
   * every slot while other games' notifications wait. A host is slow from an attempt that took
   * half the time-out or more until one that took less.
   */
  private hostCap(host: string): number {
    return this.slowHosts.has(host) ? 1 : this.limitOf(host).limit;
  }

  private limitOf(host: string): HostLimit {
    let l = this.limits.get(host);
    if (!l) {
      const { perHostConcurrency: max, perHostMinConcurrency: min = 1 } = this.d.settings;
      l = new HostLimit({ min: Math.min(min, max), max });
      this.limits.set(host, l);
      // Bounded: hosts are forgotten oldest first (a forgotten host starts again).
      if (this.limits.size > 10_000) this.limits.delete(this.limits.keys().next().value as string);
    }
    return l;
  }

  private mayStart(host: string): boolean {
    if ((this.perHost.get(host) ?? 0) >= this.hostCap(host)) return false;
    return !this.slowHosts.has(host) || this.slowInflight < Math.max(1, Math.floor(this.d.settings.concurrency / 2));
  }

  private noteSpeed(host: string, latencyMs: number): void {
    if (latencyMs >= this.d.settings.timeoutMs / 2) this.slowHosts.add(host);
    else this.slowHosts.delete(host);
    // Bounded: hosts are forgotten oldest first (a forgotten slow host is found out again).
    if (this.slowHosts.size > 10_000) this.slowHosts.delete(this.slowHosts.values().next().value as string);
  }

  /**
   * The host's answer (or none) feeds its slowness (by the whole time: a host that hangs) and
   * its adaptive limit (by the host's share of it, without our own event loop's delays).
   */
  private noteAnswer(host: string, r: SendResult): void {
    this.noteSpeed(host, r.latencyMs);
    const code = r.complete ? r.statusCode : null;
    const ok = code !== null && code < 500 && code !== 429;
    this.limitOf(host).record({ ok, latencyMs: r.hostMs, inflight: this.perHost.get(host) ?? 1 });
  }

  private send(c: Claimed, host: string): void {
    this.perHost.set(host, (this.perHost.get(host) ?? 0) + 1);
    const slow = this.slowHosts.has(host);
    if (slow) this.slowInflight++;
    // The host's slot frees when its answer is in, not after the attempt is recorded: the
    // per-host cap limits open requests to the game, and recording waits for a commit.
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      if (slow) this.slowInflight--;
      const left = (this.perHost.get(host) ?? 1) - 1;
      if (left > 0) this.perHost.set(host, left);
      else this.perHost.delete(host);
      this.next(host);
    };
    const p: Promise<void> = this.attempt(c.n, c.token, release)
      .catch((e) =>
        // Even the reduced record failed (see record): the database is failing. The lease
        // running out makes the notification due again, as after a crash.
        this.d.logger.error({ err: e, notification_id: c.n.notification_id }, 'notification attempt could not be recorded; retried when its lease runs out'),
      )
      .finally(() => {
        this.inflight.delete(p);
        release();
        this.claimSize = Math.max(this.claimSize, this.claimBatch);
        // Claims are made for several free slots at once, not one statement per attempt, and
        // not while this host's own queue refills its slots.
        const roomy = this.d.settings.concurrency - this.inflight.size >= this.claimBatch && (this.waiting.get(host)?.length ?? 0) < this.hostCap(host);
        if (roomy || this.inflight.size === 0) this.kick();
      });
    this.inflight.add(p);
  }

  /**
   * A slot of `host` freed up: send its queued notifications while it has room (its limit may
   * have grown with the answer that freed the slot) and their leases still hold.
   */
  private next(host: string): void {
    const queue = this.waiting.get(host);
    if (!queue?.length || !this.mayStart(host)) return this.drainSlowQueues();
    while (queue.length && this.mayStart(host)) {
      const c = queue.shift() as Claimed;
      this.queued--;
      const now = this.d.clock.now();
      if (!this.running || c.leaseUntil - now <= this.d.settings.timeoutMs) void this.giveBack(c, now);
      else this.send(c, host);
    }
    if (!queue.length) this.waiting.delete(host);
  }

  /** A slow host's slot freed up, or the slow hosts' budget did: another slow host's queue may go. */
  private drainSlowQueues(): void {
    for (const host of this.waiting.keys()) {
      if (this.slowHosts.has(host) && this.mayStart(host)) return this.next(host);
    }
  }

  private async giveBack(c: Claimed, at: number): Promise<void> {
    await this.d.store.defer(c.n.notification_id, c.token, at).catch((e) => this.d.logger.warn({ err: e }, 'notification defer failed'));
  }

  /** One attempt: send, then record the attempt and the new state in one transaction. */
  private async attempt(n: NotificationRow, token: string, answered: () => void): Promise<void> {
    const { keys, outbound, clock, ids, store, settings, logger } = this.d;
    const at = clock.now();
    let secret: string | undefined;
    let keyProblem = 'the game has no signing key';
    try {
      secret = (await keys.snapshot(n.game_id))?.secrets[0];
    } catch (e) {
      // Recorded as a failed attempt (and retried) rather than holding the lease silently.
      logger.error({ err: e, game_id: n.game_id }, 'signing key unavailable for a notification');
      keyProblem = 'the game signing key could not be loaded';
    }
    const result: SendResult = secret
      ? await sendNotification(outbound, { gameId: n.game_id, notifyUrl: n.notify_url, body: n.body }, secret, clock.now(), settings.timeoutMs)
      : { statusCode: null, complete: false, error: keyProblem, snippet: null, latencyMs: 0, hostMs: 0 };
    if (secret) this.noteAnswer(hostOf(n.notify_url), result);
    answered();
    const now = clock.now();
    const outcome = this.outcomeOf(n, result, now);
    this.d.metrics?.notificationAttempt(n.game_id, outcome.status === 'succeeded' ? 'success' : 'failure', result.latencyMs);
    const applied = await this.record(
      // A ship_order that settles lets its order's refund go: that one's retry window opens then.
      { notificationId: n.notification_id, token, now, shipOrderOf: n.type === 'ship_order' ? n.order_id : undefined },
      {
        attempt_id: prefixedId('nta', ids),
        notification_id: n.notification_id,
        at,
        status_code: result.statusCode,
        latency_ms: result.latencyMs,
        error: result.error,
        response_snippet: result.snippet,
      },
      outcome,
      outcome.status === 'succeeded' && n.type === 'ship_order'
        ? { orderId: n.order_id, eventId: prefixedId('oev', ids), notificationId: n.notification_id }
        : null,
    );
    if (!applied) logger.warn({ notification_id: n.notification_id }, 'notification lease was lost before the attempt was recorded');
    else if (outcome.status === 'failed') logger.warn({ notification_id: n.notification_id, game_id: n.game_id }, 'notification failed: retry window exhausted');
  }

  /**
   * Records the attempt, or, should the database refuse that record, the attempt reduced to
   * ASCII text without the answer body (PostgreSQL once refused answers holding U+0000). Left
   * unrecorded, the row would stay leased until the lease ran out and then be sent again, and
   * again, forever, a 2xx never delivering the order. Deferring it with backoff instead would
   * still resend a notification the game may have taken and lose its answer; the reduced
   * record keeps the outcome (a 2xx delivers the order) and says what was not stored. Same
   * attempt_id: should the first record have committed after all, the second is refused.
   */
  private async record(...args: Parameters<NotificationStore['recordAttempt']>): Promise<boolean> {
    const [by, attempt, outcome, delivery] = args;
    try {
      return await this.d.store.recordAttempt(...args);
    } catch (e) {
      this.d.logger.error({ err: e, notification_id: by.notificationId }, 'notification attempt could not be recorded; recording it without the answer body');
      const note = 'answer body not stored: the database refused the attempt record';
      const reduced = { ...attempt, error: attempt.error === null ? note : `${asciiOnly(attempt.error)} (${note})`, response_snippet: null };
      const last_error = outcome.last_error === null ? null : asciiOnly(outcome.last_error);
      return this.d.store.recordAttempt(by, reduced, { ...outcome, last_error }, delivery);
    }
  }

  /** 2xx: succeeded; 410: gone (no more retries); else retry per the schedule, or failed. */
  private outcomeOf(n: NotificationRow, r: SendResult, now: number): AttemptOutcome {
    const attempts = n.attempts + 1;
    // An answer that did not come whole in time decides nothing: a failed attempt.
    const code = r.complete ? r.statusCode : null;
    if (code !== null && code >= 200 && code < 300) {
      return { status: 'succeeded', attempts, next_attempt_at: n.next_attempt_at, last_error: null, delivered_at: now };
    }
    if (code === 410) return { status: 'gone', attempts, next_attempt_at: n.next_attempt_at, last_error: r.error, delivered_at: null };
    const { maxAgeMs, retryBaseMs } = this.d.settings;
    const next = nextAttemptAt(attempts, now, { startedAt: n.window_started_at ?? n.created_at, maxAgeMs, baseMs: retryBaseMs }, this.random);
    if (next === null) return { status: 'failed', attempts, next_attempt_at: n.next_attempt_at, last_error: r.error, delivered_at: null };
    return { status: 'pending', attempts, next_attempt_at: next, last_error: r.error, delivered_at: null };
  }

  private readonly random = (): number => (this.d.random ?? Math.random)();
}

/** Printable ASCII only: text no database refuses, whatever its encoding. */
function asciiOnly(s: string): string {
  return s.replace(/[^\x20-\x7e]/g, '?');
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
