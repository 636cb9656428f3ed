import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, NppaEventsTable, SessionsTable } from '../db/schema.js';

export type SessionRow = Selectable<SessionsTable>;
export type BehaviourEventRow = Selectable<NppaEventsTable>;
type Q = Kysely<DB> | Transaction<DB>;

export interface SessionFilter {
  gameId?: string;
  comboId?: string;
  open?: boolean;
  limit: number;
  after?: { createdAt: number; gameId: string; sessionId: string };
}

export class SessionStore {
  constructor(readonly db: Kysely<DB>) {}

  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }

  find(q: Q, gameId: string, sessionId: string): Promise<SessionRow | undefined> {
    return q.selectFrom('sessions').selectAll().where('game_id', '=', gameId).where('session_id', '=', sessionId).executeTakeFirst();
  }

  async insert(q: Q, row: SessionRow): Promise<void> {
    await q.insertInto('sessions').values(row).execute();
  }

  /** Guarded close: only an open session is closed, so a concurrent leave closes it once. */
  async close(q: Q, gameId: string, sessionId: string, at: number, reason: 'leave' | 'timeout'): Promise<boolean> {
    const r = await q
      .updateTable('sessions')
      .set({ left_at: at, close_reason: reason })
      .where('game_id', '=', gameId)
      .where('session_id', '=', sessionId)
      .where('left_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Open sessions entered at or before `enteredBefore` (oldest first): the timeout sweep. */
  findExpired(q: Q, enteredBefore: number, limit: number): Promise<SessionRow[]> {
    return q
      .selectFrom('sessions')
      .selectAll()
      .where('left_at', 'is', null)
      .where('entered_at', '<=', enteredBefore)
      .orderBy('entered_at')
      .limit(limit)
      .execute();
  }

  /** A player's sessions created at or after `since` (online-time accounting). */
  playerSessions(q: Q, gameId: string, comboId: string, since: number): Promise<SessionRow[]> {
    return q
      .selectFrom('sessions')
      .selectAll()
      .where('game_id', '=', gameId)
      .where('combo_id', '=', comboId)
      .where('created_at', '>=', since)
      .execute();
  }

  /** Newest first, keyset paging on (created_at, game_id, session_id). */
  list(q: Q, f: SessionFilter): Promise<SessionRow[]> {
    let query = q.selectFrom('sessions').selectAll();
    if (f.gameId !== undefined) query = query.where('game_id', '=', f.gameId);
    if (f.comboId !== undefined) query = query.where('combo_id', '=', f.comboId);
    if (f.open !== undefined) query = query.where('left_at', f.open ? 'is' : 'is not', null);
    const c = f.after;
    if (c) {
      query = query.where((eb) =>
        eb.or([
          eb('created_at', '<', c.createdAt),
          eb.and([eb('created_at', '=', c.createdAt), eb('game_id', '<', c.gameId)]),
          eb.and([eb('created_at', '=', c.createdAt), eb('game_id', '=', c.gameId), eb('session_id', '<', c.sessionId)]),
        ]),
      );
    }
    return query.orderBy('created_at', 'desc').orderBy('game_id', 'desc').orderBy('session_id', 'desc').limit(f.limit).execute();
  }

  async insertBehaviourEvent(q: Q, row: BehaviourEventRow): Promise<void> {
    await q.insertInto('nppa_events').values(row).execute();
  }
}
