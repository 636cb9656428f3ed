import type { Transaction } from 'kysely';
import { recordAudit, type Actor } from '../admin/audit.js';
import type { DB } from '../db/schema.js';
import { Errors } from '../errors.js';
import type { GameSnapshot } from '../games/service.js';
import { ageOn, beijingDate, beijingMonthStart } from '../lib/beijing-time.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { PurchaseAttempt, PurchaseCheck, PurchaseGuard } from '../orders/service.js';
import { nppaSessionId } from './identity.js';
import { checkSpending, spendingLimitFor } from './limits.js';
import type { NppaEventPage, NppaEventsQuery, Player, PutPlayerBody } from './schemas.js';
import type { ComplianceStore, NppaEventRow, PlayerRow } from './store.js';

export interface PlayerServiceDeps {
  store: ComplianceStore;
  clock: Clock;
  ids: IdGenerator;
  games: (gameId: string) => Promise<GameSnapshot | null>;
  /** A player's online seconds per Beijing day, last 7 days (from the sessions domain). */
  onlineByDay: (gameId: string, comboId: string) => Promise<{ date: string; online_seconds: number }[]>;
}

const EVENT_ID = /^bev_[0-9A-Za-z]{1,60}$/;

/** What the operator knows of players (PROTOCOL 12) and the national-system queue view. */
export class PlayerService {
  constructor(private readonly d: PlayerServiceDeps) {}

  async put(gameId: string, comboId: string, body: PutPlayerBody, by: Actor): Promise<Player> {
    const { store, clock, ids } = this.d;
    await this.requireGame(gameId);
    const now = clock.now();
    if (body.birth_date) checkBirthDate(body.birth_date, now);
    await store.transaction(async (trx) => {
      const old = await store.findPlayer(trx, gameId, comboId);
      const row: PlayerRow = {
        game_id: gameId,
        combo_id: comboId,
        pi: body.pi === undefined ? (old?.pi ?? null) : body.pi,
        birth_date: body.birth_date === undefined ? (old?.birth_date ?? null) : body.birth_date,
        banned: body.banned === undefined ? (old?.banned ?? 0) : body.banned ? 1 : 0,
        created_at: old?.created_at ?? now,
        updated_at: now,
      };
      await store.upsertPlayer(trx, row);
      // pi identifies a person: the audit log records that it changed, not its value.
      const detail = { ...body, pi: body.pi === undefined ? undefined : body.pi === null ? null : '***' };
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'player.put', target: `${gameId}/${comboId}`, detail });
    });
    return this.get(gameId, comboId);
  }

  async get(gameId: string, comboId: string): Promise<Player> {
    const { store, clock } = this.d;
    await this.requireGame(gameId);
    const now = clock.now();
    const row = await store.findPlayer(store.db, gameId, comboId);
    const month = beijingMonthStart(now);
    const [spending, days] = await Promise.all([store.monthSpending(store.db, gameId, comboId, month.start, now), this.d.onlineByDay(gameId, comboId)]);
    const age = row?.birth_date ? ageOn(row.birth_date, now) : null;
    const limit = age === null ? null : spendingLimitFor(age);
    const today = beijingDate(now);
    return {
      game_id: gameId,
      combo_id: comboId,
      recorded: row !== undefined,
      pi: row?.pi ?? null,
      birth_date: row?.birth_date ?? null,
      banned: row?.banned === 1,
      age,
      nppa_ct: row?.pi ? 0 : 2,
      limits: limit ? { per_order: limit.perOrder, per_month: limit.perMonth } : null,
      spending: {
        month: month.month,
        currency: 'CNY',
        paid: spending.spent,
        reserved: spending.reserved,
        remaining: limit ? Math.max(0, limit.perMonth - spending.spent - spending.reserved) : null,
      },
      online_seconds_today: days.find((d) => d.date === today)?.online_seconds ?? 0,
      online_days: days,
      created_at: row?.created_at ?? null,
      updated_at: row?.updated_at ?? null,
    };
  }

  /** The game's behaviour events, newest first; `status=failed` lists what the national system refused. */
  async events(gameId: string, q: NppaEventsQuery): Promise<NppaEventPage> {
    const { store } = this.d;
    await this.requireGame(gameId);
    const limit = q.limit ?? 50;
    // The cursor is the last event id of a page (bev_...): anything else is not one of ours.
    if (q.cursor !== undefined && !EVENT_ID.test(q.cursor)) throw Errors.invalidRequest('cursor is not valid');
    const rows = await store.listEvents(gameId, { status: q.status, limit: limit + 1, before: q.cursor });
    const page = rows.slice(0, limit);
    return {
      counts: await store.countEvents(gameId),
      data: page.map(toEventView),
      next_cursor: rows.length > limit ? (page[page.length - 1]?.event_id ?? null) : null,
    };
  }

  private async requireGame(gameId: string): Promise<void> {
    if (!(await this.d.games(gameId))) throw Errors.notFound(`game ${gameId} not found`);
  }
}

/**
 * create-order business rules (PROTOCOL 12): bans and minors' CNY limits. Runs inside the
 * order's creating transaction after locking the player, so one player's concurrent orders
 * are checked one at a time and each sees the others (unexpired created orders count).
 */
export class ComplianceGuard implements PurchaseGuard {
  constructor(private readonly store: ComplianceStore) {}

  async lock(trx: Transaction<DB>, gameId: string, comboId: string): Promise<PurchaseCheck | null> {
    const player = await this.store.lockPlayer(trx, gameId, comboId);
    return player ? (a) => this.check(trx, player, a) : null;
  }

  private async check(trx: Transaction<DB>, player: PlayerRow, a: PurchaseAttempt): Promise<void> {
    if (player.banned === 1) throw Errors.accountBanned(`combo_id ${a.comboId} is banned from this game`);
    if (a.currency !== 'CNY' || !player.birth_date) return;
    const age = ageOn(player.birth_date, a.now);
    const limit = spendingLimitFor(age);
    if (!limit) return;
    const m = await this.store.monthSpending(trx, a.gameId, a.comboId, beijingMonthStart(a.now).start, a.now);
    const verdict = checkSpending(limit, age, a.amount, m.spent + m.reserved);
    if (!verdict.ok) throw Errors.rechargeLimitExceeded(verdict.message);
  }
}

function checkBirthDate(date: string, now: number): void {
  const t = Date.parse(`${date}T00:00:00Z`);
  if (Number.isNaN(t) || new Date(t).toISOString().slice(0, 10) !== date) throw Errors.invalidRequest(`birth_date ${date} is not a calendar date`);
  if (date > beijingDate(now)) throw Errors.invalidRequest(`birth_date ${date} is in the future`);
  if (date < '1900-01-01') throw Errors.invalidRequest('birth_date must be 1900-01-01 or later');
}

function toEventView(e: NppaEventRow) {
  return {
    event_id: e.event_id,
    session_id: e.session_id,
    combo_id: e.combo_id,
    si: nppaSessionId(e.game_id, e.session_id),
    bt: e.bt,
    ot: e.ot_ms,
    sent_ot: e.sent_ot,
    status: e.status,
    attempts: e.attempts,
    errcode: e.errcode,
    last_error: e.last_error,
    next_attempt_at: e.next_attempt_at,
    created_at: e.created_at,
    uploaded_at: e.uploaded_at,
  };
}
