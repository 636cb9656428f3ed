import { sql, type Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { HostHealth, ShownStatus } from './schemas.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The status the API shows for a stored one (schemas.ts): SQL of shownStatus. */
const SHOWN = sql<ShownStatus>`case when status = 'pending' and attempts > 0 then 'failing' else status end`;

/** Attempts of one notify URL over the last day (an attempt succeeded when it has no error). */
interface UrlAttempts {
  notify_url: string;
  day: number | string;
  day_ok: number | string;
  hour: number | string;
  hour_ok: number | string;
  last_failure_at: number | string | null;
}

/** Undelivered notifications of one notify URL in one shown status. */
interface UrlUndelivered {
  notify_url: string;
  status: ShownStatus;
  n: number | string;
  oldest: number | string;
}

/** What one host's figures are built from, before the rows naming the error and the oldest. */
interface HostAcc {
  health: HostHealth;
  lastFailure: { url: string; at: number } | null;
  oldest: { url: string; at: number } | null;
}

/**
 * Per notify host of a game: attempts and success rate over the last hour and day, the last
 * error, undelivered notifications and the oldest of them (operators.md 3). Attempts are read
 * over notification_attempts_at (the last day's, joined to their notification for its game and
 * URL); undelivered ones over notifications_game (game_id, status).
 */
export async function deliveryHealth(db: Kysely<DB>, gameId: string, now: number): Promise<HostHealth[]> {
  const hourAgo = now - HOUR;
  const [attempts, undelivered] = await Promise.all([
    db
      .selectFrom('notification_attempts as a')
      .innerJoin('notifications as n', 'n.notification_id', 'a.notification_id')
      .select([
        'n.notify_url',
        sql<number>`count(*)`.as('day'),
        sql<number>`sum(case when a.error is null then 1 else 0 end)`.as('day_ok'),
        sql<number>`sum(case when a.at >= ${hourAgo} then 1 else 0 end)`.as('hour'),
        sql<number>`sum(case when a.at >= ${hourAgo} and a.error is null then 1 else 0 end)`.as('hour_ok'),
        sql<number | null>`max(case when a.error is null then null else a.at end)`.as('last_failure_at'),
      ])
      .where('a.at', '>=', now - DAY)
      .where('n.game_id', '=', gameId)
      .groupBy('n.notify_url')
      .execute() as Promise<UrlAttempts[]>,
    db
      .selectFrom('notifications')
      .select(['notify_url', SHOWN.as('status'), sql<number>`count(*)`.as('n'), sql<number>`min(created_at)`.as('oldest')])
      .where('game_id', '=', gameId)
      .where('status', 'in', ['pending', 'failed'])
      .groupBy(['notify_url', sql`2`])
      .execute() as Promise<UrlUndelivered[]>,
  ]);
  const hosts = new Map<string, HostAcc>();
  for (const r of attempts) addAttempts(accOf(hosts, r.notify_url), r);
  for (const r of undelivered) addUndelivered(accOf(hosts, r.notify_url), r);
  const out = await Promise.all([...hosts.values()].map((h) => complete(db, gameId, h)));
  return out.sort(byTrouble);
}

function accOf(hosts: Map<string, HostAcc>, url: string): HostAcc {
  const host = hostOf(url);
  let acc = hosts.get(host);
  if (!acc) {
    const rate = { attempts: 0, succeeded: 0, success_rate: null };
    acc = {
      health: { host, last_hour: { ...rate }, last_day: { ...rate }, last_error: null, undelivered: { pending: 0, failing: 0, failed: 0 }, oldest_undelivered: null },
      lastFailure: null,
      oldest: null,
    };
    hosts.set(host, acc);
  }
  return acc;
}

function addAttempts(acc: HostAcc, r: UrlAttempts): void {
  const { last_hour: hour, last_day: day } = acc.health;
  hour.attempts += Number(r.hour);
  hour.succeeded += Number(r.hour_ok);
  day.attempts += Number(r.day);
  day.succeeded += Number(r.day_ok);
  hour.success_rate = hour.attempts ? hour.succeeded / hour.attempts : null;
  day.success_rate = day.attempts ? day.succeeded / day.attempts : null;
  const at = r.last_failure_at === null ? null : Number(r.last_failure_at);
  if (at !== null && (!acc.lastFailure || at > acc.lastFailure.at)) acc.lastFailure = { url: r.notify_url, at };
}

function addUndelivered(acc: HostAcc, r: UrlUndelivered): void {
  const u = acc.health.undelivered;
  if (r.status === 'pending' || r.status === 'failing' || r.status === 'failed') u[r.status] += Number(r.n);
  const at = Number(r.oldest);
  if (!acc.oldest || at < acc.oldest.at) acc.oldest = { url: r.notify_url, at };
}

/** Reads the rows behind the host's last error and oldest undelivered notification. */
async function complete(db: Kysely<DB>, gameId: string, acc: HostAcc): Promise<HostHealth> {
  const { lastFailure: f, oldest: o } = acc;
  const [error, oldest] = await Promise.all([
    f &&
      db
        .selectFrom('notification_attempts as a')
        .innerJoin('notifications as n', 'n.notification_id', 'a.notification_id')
        .select(['a.at', 'a.notification_id', 'a.status_code', 'a.error'])
        .where('a.at', '=', f.at)
        .where('a.error', 'is not', null)
        .where('n.game_id', '=', gameId)
        .where('n.notify_url', '=', f.url)
        .orderBy('a.attempt_id', 'desc')
        .limit(1)
        .executeTakeFirst(),
    o &&
      db
        .selectFrom('notifications')
        .select(['notification_id', SHOWN.as('status'), 'created_at'])
        .where('game_id', '=', gameId)
        .where('status', 'in', ['pending', 'failed'])
        .where('notify_url', '=', o.url)
        .where('created_at', '=', o.at)
        .orderBy('notification_id')
        .limit(1)
        .executeTakeFirst(),
  ]);
  return {
    ...acc.health,
    last_error: error ? { at: Number(error.at), notification_id: error.notification_id, status_code: error.status_code, error: error.error } : null,
    oldest_undelivered: oldest ? { notification_id: oldest.notification_id, status: oldest.status, created_at: Number(oldest.created_at) } : null,
  };
}

/** Most failing first: undelivered after an attempt, then the day's success rate, then name. */
function byTrouble(a: HostHealth, b: HostHealth): number {
  const stuck = (h: HostHealth) => h.undelivered.failing + h.undelivered.failed;
  return stuck(b) - stuck(a) || (a.last_day.success_rate ?? 1) - (b.last_day.success_rate ?? 1) || a.host.localeCompare(b.host);
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}
