import type { DomainMetrics } from '../observability/metrics.js';
import type { Kysely, Transaction } from 'kysely';
import { MAX_SESSION_TIMEOUT_SECONDS } from '../config/index.js';
import type { DB } from '../db/schema.js';
import { Errors } from '../errors.js';
import type { GameSnapshot } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import { isUniqueViolation } from '../orders/store.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import { beijingDate, beijingDayStart, secondsPerBeijingDay } from '../lib/beijing-time.js';
import type { SessionPage, SessionReportBody, SessionView } from './schemas.js';
import type { SessionRow, SessionStore } from './store.js';

export interface SessionServiceDeps {
  store: SessionStore;
  clock: Clock;
  ids: IdGenerator;
  /** Game settings for sessions closed by the service itself (timeout sweep). */
  games?: (gameId: string) => Promise<GameSnapshot | null>;
  /** An open session with no leave for this long is closed with reason `timeout`. */
  timeoutMs?: number;
  /** Counts reports per game for /metrics (src/observability). */
  metrics?: Pick<DomainMetrics, 'sessionReport'>;
}

const DEFAULT_TIMEOUT_MS = 86_400_000;
const MAX_TIMEOUT_MS = MAX_SESSION_TIMEOUT_SECONDS * 1000;
const DAY_MS = 86_400_000;

/**
 * Enter/leave reports (PROTOCOL 4). Times are the service's receive times. Each accepted report
 * that changes state also becomes a national-system behaviour event, written in the same
 * transaction, for games with national-system credentials.
 */
export class SessionService {
  constructor(private readonly d: SessionServiceDeps) {}

  async enter(snap: GameSnapshot, body: SessionReportBody): Promise<void> {
    const { store, clock } = this.d;
    const gameId = snap.game.game_id;
    this.d.metrics?.sessionReport(gameId, 'enter');
    const now = clock.now();
    const row: SessionRow = {
      game_id: gameId,
      session_id: body.session_id,
      combo_id: body.combo_id,
      entered_at: now,
      left_at: null,
      close_reason: null,
      created_at: now,
    };
    // The common case (a new session) is one insert, with its behaviour event for a game that
    // reports to the national system; a retry or a conflicting report falls through to what is
    // stored.
    if (snap.game.nppa_app_id) {
      return store.transaction(async (trx) => {
        if (await store.insertIfAbsent(trx, row)) return this.behaviour(trx, snap, row, 1, now);
        checkEnterRetry(await this.stored(trx, gameId, body.session_id), body);
      });
    }
    // Nothing else to write: the insert is a transaction of its own (one round trip on PostgreSQL).
    if (await store.oneStatement((q) => store.insertIfAbsent(q, row))) return;
    checkEnterRetry(await this.stored(store.db, gameId, body.session_id), body);
  }

  /** The session a conflicting insert ran into (it is committed: rows are never deleted). */
  private async stored(q: Kysely<DB> | Transaction<DB>, gameId: string, sessionId: string): Promise<SessionRow> {
    const existing = await this.d.store.find(q, gameId, sessionId);
    if (!existing) throw new Error(`session ${sessionId} vanished after a conflicting insert`);
    return existing;
  }

  async leave(snap: GameSnapshot, body: SessionReportBody): Promise<void> {
    this.d.metrics?.sessionReport(snap.game.game_id, 'leave');
    if (snap.game.nppa_app_id) return this.leaveReported(snap, body);
    // Nothing else to write: each step is one statement, a transaction of its own (on
    // PostgreSQL the common case, closing an open session, is one round trip instead of four).
    const { store, clock } = this.d;
    const gameId = snap.game.game_id;
    const now = clock.now();
    const timeout = this.timeoutMs();
    if (await store.oneStatement((q) => store.close(q, gameId, body.session_id, now, 'leave', body.combo_id, now - timeout))) return;
    const existing = await store.find(store.db, gameId, body.session_id);
    if (existing) {
      if (existing.combo_id !== body.combo_id) throw otherPlayer(body.session_id);
      if (existing.left_at !== null) return; // already closed: a retry
      // Timed out, the sweeper not there yet: the session ended when its timeout ran out, and
      // this late leave changes nothing (as after the sweeper's close).
      if (this.timedOut(existing, now)) return void (await store.oneStatement((q) => this.closeAtTimeout(q, null, existing)));
      return this.leave(snap, body); // entered by a concurrent report after the close above
    }
    // Leave without enter: kept, never dropped (compliance data).
    const row: SessionRow = { game_id: gameId, session_id: body.session_id, combo_id: body.combo_id, entered_at: null, left_at: now, close_reason: 'leave', created_at: now };
    if (await store.oneStatement((q) => store.insertIfAbsent(q, row))) return;
    return this.leave(snap, body); // a concurrent report created the session first
  }

  /** leave-game for a game that reports to the national system: the logout event in the same transaction. */
  private async leaveReported(snap: GameSnapshot, body: SessionReportBody): Promise<void> {
    const { store, clock } = this.d;
    const gameId = snap.game.game_id;
    const now = clock.now();
    await store.transaction(async (trx) => {
      const existing = await store.find(trx, gameId, body.session_id);
      if (existing) {
        if (existing.combo_id !== body.combo_id) throw otherPlayer(body.session_id);
        if (existing.left_at !== null) return; // already closed: a retry
        // Timed out, the sweeper not there yet: closed as the sweeper would (see leave()).
        if (this.timedOut(existing, now)) return void (await this.closeAtTimeout(trx, snap, existing));
        if (await store.close(trx, gameId, body.session_id, now, 'leave')) await this.behaviour(trx, snap, existing, 0, now);
        return;
      }
      // Leave without enter: kept, never dropped (compliance data).
      const row: SessionRow = {
        game_id: gameId,
        session_id: body.session_id,
        combo_id: body.combo_id,
        entered_at: null,
        left_at: now,
        close_reason: 'leave',
        created_at: now,
      };
      await store.insert(trx, row);
      await this.behaviour(trx, snap, row, 0, now);
    }).catch(async (e) => {
      if (!isUniqueViolation(e)) throw e;
      return this.leaveReported(snap, body); // a concurrent report created the session first
    });
  }

  /**
   * Closes open sessions with no leave for the timeout (PROTOCOL 4). The close time is the
   * moment the timeout ran out; the logout behaviour event is written in the same transaction,
   * and the guarded close makes a concurrent leave or another sweeper win at most once.
   */
  async closeTimedOut(limit = 500): Promise<number> {
    const { store, clock } = this.d;
    const timeout = this.timeoutMs();
    const expired = await store.findExpired(store.db, clock.now() - timeout, limit);
    let closed = 0;
    for (const s of expired) {
      const snap = (await this.d.games?.(s.game_id)) ?? null;
      if (await store.transaction((trx) => this.closeAtTimeout(trx, snap, s))) closed++;
    }
    return closed;
  }

  /**
   * Closes an open session at the moment its timeout ran out (reason `timeout`), with its
   * logout event for a game that reports to the national system; false if it was closed already.
   */
  private async closeAtTimeout(q: Kysely<DB> | Transaction<DB>, snap: GameSnapshot | null, s: SessionRow): Promise<boolean> {
    const at = (s.entered_at as number) + this.timeoutMs();
    if (!(await this.d.store.close(q, s.game_id, s.session_id, at, 'timeout'))) return false;
    if (snap) await this.behaviour(q, snap, s, 0, at);
    return true;
  }

  /** A player's online seconds per Beijing day over the last `days` days (today last). */
  async onlineByDay(gameId: string, comboId: string, days = 7): Promise<{ date: string; online_seconds: number }[]> {
    const { store, clock } = this.d;
    const now = clock.now();
    const windowStart = beijingDayStart(now) - (days - 1) * DAY_MS;
    // A session lasts at most the timeout it was closed under, which may have been longer than
    // today's (the setting was lowered): the longest one allowed bounds what can reach the window.
    const since = windowStart - MAX_TIMEOUT_MS - DAY_MS;
    const rows = await store.playerSessions(store.db, gameId, comboId, since);
    const intervals = rows.filter((r) => r.entered_at !== null).map((r) => ({ from: r.entered_at as number, to: this.endOf(r, now) }));
    const perDay = secondsPerBeijingDay(intervals, windowStart, now);
    return Array.from({ length: days }, (_, i) => {
      const date = beijingDate(windowStart + i * DAY_MS);
      return { date, online_seconds: perDay.get(date) ?? 0 };
    });
  }

  /** Operator listing, newest first, with cursor paging. */
  async list(q: { game_id?: string; combo_id?: string; open?: boolean; limit?: number; cursor?: string }): Promise<SessionPage> {
    const { store, clock } = this.d;
    const limit = q.limit ?? 50;
    const rows = await store.list(store.db, {
      gameId: q.game_id,
      comboId: q.combo_id,
      open: q.open,
      limit: limit + 1,
      after: q.cursor === undefined ? undefined : parseSessionCursor(q.cursor),
    });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const now = clock.now();
    const out: SessionPage = {
      data: page.map((r) => toSessionView(r, this.endOf(r, now))),
      next_cursor: rows.length > limit && last ? sessionCursor(last) : null,
    };
    if (q.game_id !== undefined && q.combo_id !== undefined) out.online_days = await this.onlineByDay(q.game_id, q.combo_id);
    return out;
  }

  private timeoutMs(): number {
    return this.d.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** An open session past its timeout: closed in effect, whether or not the sweeper has run. */
  private timedOut(s: SessionRow, now: number): boolean {
    return s.left_at === null && s.entered_at !== null && s.entered_at <= now - this.timeoutMs();
  }

  /** Where a session's online time ends: its leave, else now, but never past its timeout. */
  private endOf(s: SessionRow, now: number): number {
    if (s.left_at !== null) return s.left_at;
    return s.entered_at === null ? now : Math.min(now, s.entered_at + this.timeoutMs());
  }

  /** The behaviour event of a session change (games that report to the national system), in `trx`, the change's transaction. */
  private async behaviour(trx: Kysely<DB> | Transaction<DB>, snap: GameSnapshot, s: SessionRow, bt: 0 | 1, at: number): Promise<void> {
    if (!snap.game.nppa_app_id) return;
    await this.d.store.insertBehaviourEvent(trx, {
      event_id: prefixedId('bev', this.d.ids),
      game_id: s.game_id,
      session_id: s.session_id,
      combo_id: s.combo_id,
      bt,
      ot_ms: at,
      status: 'pending',
      attempts: 0,
      next_attempt_at: at,
      last_error: null,
      created_at: at,
      uploaded_at: null,
      locked_until: 0,
      locked_by: null,
      sent_ot: null,
      sent_pi: null,
      errcode: null,
      retime: 0,
    });
  }
}

function checkEnterRetry(existing: SessionRow, body: SessionReportBody): void {
  if (existing.combo_id !== body.combo_id) throw otherPlayer(body.session_id);
  if (existing.left_at !== null || existing.entered_at === null) {
    throw Errors.invalidRequest(`session_id ${body.session_id} is already closed; use a new session_id for a new session`);
  }
}

const otherPlayer = (sessionId: string) => Errors.invalidRequest(`session_id ${sessionId} belongs to another combo_id`);

/** `end`: where its online time ends (SessionService.endOf). */
function toSessionView(r: SessionRow, end: number): SessionView {
  return {
    game_id: r.game_id,
    session_id: r.session_id,
    combo_id: r.combo_id,
    entered_at: r.entered_at,
    left_at: r.left_at,
    close_reason: r.close_reason,
    open: r.left_at === null,
    online_seconds: r.entered_at === null ? null : Math.floor((end - r.entered_at) / 1000),
  };
}

type SessionCursor = [createdAt: number, gameId: string, sessionId: string];

function sessionCursor(r: SessionRow): string {
  return encodeCursor([r.created_at, r.game_id, r.session_id] satisfies SessionCursor);
}

function parseSessionCursor(c: string): { createdAt: number; gameId: string; sessionId: string } {
  // created_at is a bigint on PostgreSQL: 1.5 or 1e20 in a forged cursor must be 400, not a database error.
  const valid = (v: unknown) => Array.isArray(v) && v.length === 3 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && typeof v[2] === 'string';
  const [createdAt, gameId, sessionId] = decodeCursor<SessionCursor>(c, valid);
  return { createdAt, gameId, sessionId };
}
