import { type Expression, type Kysely, type Selectable, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { DB, NppaEventsTable, SessionsTable } from '../db/schema.js';
import { prepare } from '../db/prepared.js';
import { acrossGames, acrossGamesQuery } from '../db/per-game.js';
import { inIndexOrder } from '../db/planner.js';
import type { StoreDatabase } from '../db/database.js';
import { DatabaseStore } from '../db/database-store.js';
import { playerSessionsSqlite } from './player-sessions-sqlite.js';

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

export const SESSION_COLUMNS = ['game_id', 'session_id', 'combo_id', 'entered_at', 'left_at', 'close_reason', 'created_at'] as const satisfies readonly (keyof SessionRow)[];

/** The prepared insert's parameters in SESSION_COLUMNS order, by named fields (see orders/store.ts, orderParams). */
export const sessionParams = (r: SessionRow): unknown[] => [r.game_id, r.session_id, r.combo_id, r.entered_at, r.left_at, r.close_reason, r.created_at];

export class SessionStore extends DatabaseStore {
  // enter-game runs this on every request: compiled once (see db/prepared.ts).
  private readonly insertNew;

  constructor(database: StoreDatabase) {
    super(database);
    const sample = Object.fromEntries(SESSION_COLUMNS.map((c) => [c, null])) as unknown as SessionRow;
    this.insertNew = prepare(database.db, (d) =>
      d.insertInto('sessions').values(sample).onConflict((oc) => oc.columns(['game_id', 'session_id']).doNothing()),
    );
  }

  find(q: Q, gameId: string, sessionId: string): Promise<SessionRow | undefined> {
    return q.selectFrom('sessions').selectAll().where('game_id', '=', gameId).where('session_id', '=', sessionId).executeTakeFirst();
  }

  async insert(q: Q, row: SessionRow): Promise<void> {
    await q.insertInto('sessions').values(row).execute();
  }

  /** One statement: inserts unless the session exists; true when this call created it. */
  async insertIfAbsent(q: Q, row: SessionRow): Promise<boolean> {
    const r = await this.insertNew(q, sessionParams(row));
    return Number(r.numAffectedRows ?? 0n) > 0;
  }

  /**
   * Guarded close: only an open session is closed, so a concurrent leave closes it once. With
   * `comboId`, only that player's session; with `enteredAfter`, only one entered after then
   * (not timed out yet).
   */
  async close(q: Q, gameId: string, sessionId: string, at: number, reason: 'leave' | 'timeout', comboId?: string, enteredAfter?: number): Promise<boolean> {
    let update = q
      .updateTable('sessions')
      .set({ left_at: at, close_reason: reason })
      .where('game_id', '=', gameId)
      .where('session_id', '=', sessionId)
      .where('left_at', 'is', null);
    if (comboId !== undefined) update = update.where('combo_id', '=', comboId);
    if (enteredAfter !== undefined) update = update.where('entered_at', '>', enteredAfter);
    const r = await update.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * Open sessions entered at or before `enteredBefore`, oldest first: the timeout sweep, up to
   * `limit` a run. Read per game from sessions_open_created (db/per-game.ts): an open session's
   * created_at is its entered_at (enter-game sets both; a session first reported by a leave is
   * closed), so the range on created_at is the index's, and the entered_at term only restates it.
   */
  findExpired(q: Q, enteredBefore: number, limit: number): Promise<SessionRow[]> {
    return acrossGames(
      this.postgres,
      q,
      'sessions',
      (gameId) =>
        q
          .selectFrom('sessions')
          .selectAll()
          .where('game_id', '=', gameId)
          .where('left_at', 'is', null)
          .where('created_at', '<=', enteredBefore)
          .where('entered_at', '<=', enteredBefore)
          .orderBy('created_at')
          .orderBy('session_id')
          .limit(limit),
      (m) => m.orderBy('created_at').orderBy('game_id').orderBy('session_id').limit(limit),
    );
  }

  /**
   * A player's sessions created at or after `since` (online-time accounting). On SQLite from the
   * player index beside the database (./player-sessions-sqlite.ts), on the root handle.
   */
  playerSessions(q: Q, gameId: string, comboId: string, since: number): Promise<SessionRow[]> {
    if (!this.postgres) return playerSessionsSqlite(q, { gameId, comboId, since });
    return q
      .selectFrom('sessions')
      .selectAll()
      .where('game_id', '=', gameId)
      .where('combo_id', '=', comboId)
      .where('created_at', '>=', since)
      .execute();
  }

  /**
   * Newest first, keyset paging on (created_at, game_id, session_id). With `open` set, one game is
   * one range read of its open or closed index (game_id, created_at, session_id) in order;
   * without a game, every game's newest rows are read that way and merged in one statement
   * (db/per-game.ts; no sort of every session). A player's sessions are read from the player
   * index. Neither set: no index holds a game's open and closed sessions together (migration
   * 0009 dropped the one that did, for a cheaper enter-game), so the newest of each are read
   * and merged in one statement.
   */
  async list(q: Q, f: SessionFilter): Promise<SessionRow[]> {
    if (f.comboId !== undefined && !this.postgres) return playerSessionsSqlite(q, { ...f, comboId: f.comboId });
    if (f.open !== undefined || f.comboId !== undefined) return this.pages(q, f).execute();
    // One statement, so one snapshot: a session is in exactly one of the two pages. On
    // PostgreSQL each page is read in its index's order, not gathered and sorted (a cursor's
    // page read every open session older than it; db/planner.ts).
    return inIndexOrder(this.postgres, q, (db) => {
      const open = this.pages(db, { ...f, open: true });
      const closed = this.pages(db, { ...f, open: false });
      const both = db.selectFrom(open.as('o')).selectAll().unionAll(db.selectFrom(closed.as('c')).selectAll());
      return newestFirst(db.selectFrom(both.as('u')).selectAll(), f.limit).execute();
    });
  }

  /** The listing's page of `f` as one statement, not yet run: one game's, or every game's merged. */
  private pages(q: Q, f: SessionFilter): SelectQueryBuilder<DB, any, SessionRow> {
    if (f.gameId !== undefined) return page(q, f, f.gameId);
    return acrossGamesQuery(this.postgres, q, 'sessions', (gameId) => page(q, f, gameId), (m) => newestFirst(m, f.limit));
  }

  async insertBehaviourEvent(q: Q, row: BehaviourEventRow): Promise<void> {
    await q.insertInto('nppa_events').values(row).execute();
  }
}

/** One game's page of `f`, newest first, read in order from an index that starts with game_id. */
function page(q: Q, f: SessionFilter, gameId: string | Expression<string>): SelectQueryBuilder<DB, 'sessions', SessionRow> {
  let query = q.selectFrom('sessions').selectAll().where('game_id', '=', gameId);
  if (f.comboId !== undefined) query = query.where('combo_id', '=', f.comboId);
  if (f.open !== undefined) query = query.where('left_at', f.open ? 'is' : 'is not', null);
  const c = f.after;
  if (c) {
    // `created_at <=` first: a range the index can seek to (see OrderAdminStore.list).
    query = query.where('created_at', '<=', c.createdAt).where((eb) =>
      eb.or([
        eb('created_at', '<', c.createdAt),
        eb('game_id', '<', c.gameId),
        eb.and([eb('game_id', '=', c.gameId), eb('session_id', '<', c.sessionId)]),
      ]),
    );
  }
  return newestFirst(query, f.limit);
}

/** The listing's order, newest first by (created_at, game_id, session_id), and its page size. */
function newestFirst<T extends SelectQueryBuilder<any, any, any>>(query: T, limit: number): T {
  return query.orderBy('created_at', 'desc').orderBy('game_id', 'desc').orderBy('session_id', 'desc').limit(limit) as T;
}
