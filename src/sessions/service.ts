import type { Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { Errors } from '../errors.js';
import type { GameSnapshot } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import { isUniqueViolation } from '../orders/store.js';
import type { SessionReportBody } from './schemas.js';
import type { SessionRow, SessionStore } from './store.js';

export interface SessionServiceDeps {
  store: SessionStore;
  clock: Clock;
  ids: IdGenerator;
}

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
    // The common case (a new session) is one insert with its behaviour event; a retry or a
    // conflicting report falls through to what is stored.
    await store.transaction(async (trx) => {
      if (await store.insertIfAbsent(trx, row)) return this.behaviour(trx, snap, row, 1, now);
      const existing = await store.find(trx, gameId, body.session_id);
      if (!existing) throw new Error(`session ${body.session_id} vanished after a conflicting insert`);
      checkEnterRetry(existing, body);
    });
  }

  async leave(snap: GameSnapshot, body: SessionReportBody): Promise<void> {
    const { store, clock } = this.d;
    const gameId = snap.game.game_id;
    const now = clock.now();
    await store.transaction(async (trx) => {
      const existing = await store.find(trx, gameId, body.session_id);
      if (existing) {
        if (existing.combo_id !== body.combo_id) throw otherPlayer(body.session_id);
        if (existing.left_at !== null) return; // already closed: a retry
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
      return this.leave(snap, body); // a concurrent report created the session first
    });
  }

  private async behaviour(trx: Transaction<DB>, snap: GameSnapshot, s: SessionRow, bt: 0 | 1, at: number): Promise<void> {
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
