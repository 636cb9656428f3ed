import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Actor } from '../../admin/audit.js';
import type { DB } from '../../db/schema.js';
import { isApiError } from '../../errors.js';
import { beijingDate, beijingDayStart } from '../../lib/beijing-time.js';
import type { Clock } from '../../lib/clock.js';
import { PeriodicJob } from '../../lib/periodic-job.js';
import type { ReconciliationService } from './service.js';

export interface ReconciliationScheduleDeps {
  db: Kysely<DB>;
  service: ReconciliationService;
  /** The channels with a statement to reconcile (wechat, alipay). */
  channels: readonly string[];
  clock: Clock;
  logger: Logger;
  /** RECONCILE_HOUR: the hour of the day (Beijing time, 0-23) from which the previous day is reconciled. */
  hour: number;
  /** How often the schedule looks for work. */
  intervalMs: number;
}

/** The actor of scheduled runs in the reconciliations and the audit log. */
export const SCHEDULE_ACTOR: Actor = { actor: 'schedule', address: null };
const HOUR_MS = 3_600_000;
/** How long an instance holds a (game, channel, day) while it reconciles it. */
const LEASE_MS = 10 * 60_000;
/** A statement not had (the provider did not answer, or has not made it yet) is asked for again after this. */
export const RETRY_MS = HOUR_MS;

/**
 * The scheduled reconciliation (payments.md 6): from RECONCILE_HOUR each day (Beijing time,
 * the providers' day; their bills of the previous day are ready by 10:00), the previous day
 * is reconciled for every game with an enabled channel that has statements. Each (game,
 * channel, day) is a row of reconciliation_schedule, taken under a lease by one instance at a
 * time (a guarded update, as the provider-payments job takes a payment) and done once: a run
 * that got the statement is never repeated; one that did not is stored `failed` and tried
 * again an hour later until the day is over.
 */
export class ReconciliationSchedule {
  private readonly owner = randomUUID();
  private readonly job: PeriodicJob;

  constructor(private readonly d: ReconciliationScheduleDeps) {
    this.job = new PeriodicJob(() => this.runOnce(), d.intervalMs, (err) => d.logger.error({ err }, 'scheduled reconciliation failed'));
  }

  start(): void {
    this.job.start();
  }

  stop(): Promise<void> {
    return this.job.stop();
  }

  /** One pass: the previous day's due (game, channel) pairs, once the hour has come; how many were run. */
  async runOnce(): Promise<{ date: string | null; runs: number }> {
    const now = this.d.clock.now();
    const today = beijingDayStart(now);
    if (now < today + this.d.hour * HOUR_MS) return { date: null, runs: 0 };
    const date = beijingDate(today - 1);
    let runs = 0;
    for (const p of await this.due(date, now)) {
      if (this.job.halting) break;
      if (!(await this.lease(p, date, now))) continue;
      runs++;
      await this.reconcile(p, date);
    }
    return { date, runs };
  }

  /** The pairs of `date` not yet done: every enabled channel's, its row added when missing. */
  private async due(date: string, now: number): Promise<{ game_id: string; channel: string }[]> {
    const { db, channels } = this.d;
    if (!channels.length) return [];
    const enabled = await db.selectFrom('game_channels').select(['game_id', 'channel']).where('channel', 'in', channels).where('enabled', '=', 1).execute();
    const rows = await db.selectFrom('reconciliation_schedule').select(['game_id', 'channel', 'state', 'next_try_at', 'locked_until']).where('date', '=', date).execute();
    const known = new Map(rows.map((r) => [`${r.game_id}\n${r.channel}`, r]));
    const out: { game_id: string; channel: string }[] = [];
    for (const p of enabled) {
      const r = known.get(`${p.game_id}\n${p.channel}`);
      if (!r) {
        const row = { ...p, date, state: 'due' as const, reconciliation_id: null, attempts: 0, next_try_at: now, locked_until: 0, locked_by: null, updated_at: now };
        await db.insertInto('reconciliation_schedule').values(row).onConflict((oc) => oc.columns(['date', 'game_id', 'channel']).doNothing()).execute();
        out.push(p);
      } else if (r.state === 'due' && r.next_try_at <= now && r.locked_until < now) out.push(p);
    }
    return out;
  }

  /** Takes a pair for this instance; false when another holds it or has done it meanwhile. */
  private async lease(p: { game_id: string; channel: string }, date: string, now: number): Promise<boolean> {
    const r = await this.d.db
      .updateTable('reconciliation_schedule')
      .set({ locked_until: now + LEASE_MS, locked_by: this.owner })
      .where('date', '=', date)
      .where('game_id', '=', p.game_id)
      .where('channel', '=', p.channel)
      .where('state', '=', 'due')
      .where('next_try_at', '<=', now)
      .where('locked_until', '<', now)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  private async reconcile(p: { game_id: string; channel: string }, date: string): Promise<void> {
    const { db, service, clock, logger } = this.d;
    const key = { game_id: p.game_id, channel: p.channel, date };
    let patch: { state: 'due' | 'done' | 'skipped'; reconciliation_id?: string; next_try_at?: number };
    try {
      const r = await service.run(p.channel, p.game_id, date, SCHEDULE_ACTOR);
      patch = r.status === 'failed' ? { state: 'due', reconciliation_id: r.reconciliation_id, next_try_at: clock.now() + RETRY_MS } : { state: 'done', reconciliation_id: r.reconciliation_id };
      logger.info({ ...key, status: r.status, reconciliation_id: r.reconciliation_id }, 'scheduled reconciliation');
    } catch (err) {
      // 4xx: the game no longer has the channel. Anything else (the database): tried again later.
      patch = isApiError(err) && err.status < 500 ? { state: 'skipped' } : { state: 'due', next_try_at: clock.now() + RETRY_MS };
      logger.warn({ err, ...key }, 'scheduled reconciliation not run');
    }
    await db
      .updateTable('reconciliation_schedule')
      .set((eb) => ({ ...patch, attempts: eb('attempts', '+', 1), locked_until: 0, locked_by: null, updated_at: clock.now() }))
      .where('date', '=', date)
      .where('game_id', '=', p.game_id)
      .where('channel', '=', p.channel)
      .where('locked_by', '=', this.owner)
      .execute();
  }
}
