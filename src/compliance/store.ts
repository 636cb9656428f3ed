import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { DB, NppaEventsTable, NppaLeasesTable, PlayersTable } from '../db/schema.js';
import type { StoreDatabase } from '../db/database.js';
import { DatabaseStore } from '../db/database-store.js';
import { prepare } from '../db/prepared.js';
import { MAX_ORDER_TTL_SECONDS } from '../games/schemas.js';
import { spendingRowsSqlite } from './month-spending-sqlite.js';

export type PlayerRow = Selectable<PlayersTable>;
export type NppaEventRow = Selectable<NppaEventsTable>;
export type NppaEventStatus = NppaEventRow['status'];
export type NppaLeaseRow = Selectable<NppaLeasesTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for players, minors' spending totals and the national-system upload queue. */
export class ComplianceStore extends DatabaseStore {
  // Every create-order runs these (the purchase guard): compiled once (see db/prepared.ts).
  private readonly playerById;

  constructor(database: StoreDatabase) {
    super(database);
    this.playerById = prepare<PlayerRow>(database.db, (d) => d.selectFrom('players').selectAll().where('game_id', '=', '').where('combo_id', '=', ''));
  }

  // ---- players ----------------------------------------------------------------------------

  findPlayer(q: Q, gameId: string, comboId: string): Promise<PlayerRow | undefined> {
    return q.selectFrom('players').selectAll().where('game_id', '=', gameId).where('combo_id', '=', comboId).executeTakeFirst();
  }

  /**
   * The player row, locked until the transaction ends, so one player's concurrent orders are
   * checked one after another. PostgreSQL: a row lock. SQLite: a no-op write first, so the
   * transaction holds the database write lock before it reads the totals.
   */
  async lockPlayer(trx: Transaction<DB>, gameId: string, comboId: string): Promise<PlayerRow | undefined> {
    if (this.postgres) {
      return trx.selectFrom('players').selectAll().where('game_id', '=', gameId).where('combo_id', '=', comboId).forUpdate().executeTakeFirst();
    }
    // SQLite: the transaction holds the write lock from its start (group commit begins
    // IMMEDIATE; see db/group-commit.ts), so what is read here stays true until it commits.
    return (await this.playerById(trx, [gameId, comboId])).rows[0];
  }

  async upsertPlayer(q: Q, row: PlayerRow): Promise<void> {
    await q
      .insertInto('players')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['game_id', 'combo_id']).doUpdateSet({ pi: row.pi, birth_date: row.birth_date, banned: row.banned, updated_at: row.updated_at }),
      )
      .execute();
  }

  /**
   * The player's CNY spending in the month that began at `since`. `spent`: orders paid (or
   * delivered) since then; a payment counts in the month it is made, whenever its order was
   * created. `reserved`: created orders not yet expired, whichever month they were created in
   * (each could be paid now; counted so open orders cannot pass a limit together). Orders
   * created more than the longest order lifetime before `since` are not read: none of them can
   * be open, and one was paid this month only as a late payment (after it expired).
   */
  async monthSpending(q: Q, gameId: string, comboId: string, since: number, now: number): Promise<{ spent: number; reserved: number }> {
    const from = since - MAX_ORDER_TTL_SECONDS * 1000;
    const rows = this.postgres
      ? await q
          .selectFrom('orders')
          .select(['status', 'expires_at', 'paid_at', 'amount'])
          .where('game_id', '=', gameId)
          .where('combo_id', '=', comboId)
          .where('created_at', '>=', from)
          .where('currency', '=', 'CNY')
          .where('status', 'in', ['created', 'paid', 'delivered'])
          .execute()
      : await spendingRowsSqlite(this.db, q, gameId, comboId, from);
    let spent = 0;
    let reserved = 0;
    for (const r of rows) {
      if (r.status === 'created') {
        if (r.expires_at > now) reserved += Number(r.amount);
      } else if (r.paid_at !== null && r.paid_at >= since) spent += Number(r.amount);
    }
    return { spent, reserved };
  }

  async playerPis(q: Q, gameId: string, comboIds: string[]): Promise<Map<string, string>> {
    if (comboIds.length === 0) return new Map();
    const rows = await q
      .selectFrom('players')
      .select(['combo_id', 'pi'])
      .where('game_id', '=', gameId)
      .where('combo_id', 'in', comboIds)
      .where('pi', 'is not', null)
      .execute();
    return new Map(rows.map((r) => [r.combo_id, r.pi as string]));
  }

  /**
   * The identity each of these sessions' logins was accepted with (the `pi`, '' for a guest):
   * their logouts are sent with the same, whatever was recorded for the player since.
   */
  async loginIdentities(q: Q, gameId: string, sessionIds: string[]): Promise<Map<string, string>> {
    if (sessionIds.length === 0) return new Map();
    const rows = await q
      .selectFrom('nppa_events')
      .select(['session_id', 'sent_pi'])
      .where('game_id', '=', gameId)
      .where('session_id', 'in', sessionIds)
      // A literal, as in the partial index nppa_events_login (a bound 1 would not match it).
      .where(sql<boolean>`bt = 1`)
      .where('sent_pi', 'is not', null)
      .execute();
    return new Map(rows.map((r) => [r.session_id, r.sent_pi as string]));
  }

  // ---- upload queue -----------------------------------------------------------------------

  /**
   * Games with unclaimed pending events that are not paused (nppa_leases.paused_until): the
   * back-off is the game's, not each event's, so a game's backlog goes out as one queue.
   */
  async dueGames(now: number, limit: number, after = ''): Promise<string[]> {
    const rows = await this.db
      .selectFrom('nppa_events as e')
      .select('e.game_id')
      .distinct()
      .where('e.status', '=', 'pending')
      .where('e.game_id', '>', after)
      .where('e.locked_until', '<=', now)
      .where(({ not, exists, selectFrom }) =>
        not(exists(selectFrom('nppa_leases as l').select('l.game_id').whereRef('l.game_id', '=', 'e.game_id').where('l.paused_until', '>', now))),
      )
      .orderBy('e.game_id')
      .limit(limit)
      .execute();
    return rows.map((r) => r.game_id);
  }

  /**
   * The oldest pending events of a game, in recorded order, whatever their claim: the uploader
   * sends from the head of this queue only, so nothing overtakes an earlier pending event.
   */
  backlog(gameId: string, limit: number): Promise<NppaEventRow[]> {
    return this.db
      .selectFrom('nppa_events')
      .selectAll()
      .where('game_id', '=', gameId)
      .where('status', '=', 'pending')
      .orderBy('ot_ms')
      .orderBy('event_id')
      .limit(limit)
      .execute();
  }

  /** Guarded claim: returns the ids this owner got (another process may have taken some). */
  async claim(ids: string[], owner: string, now: number, until: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.db
      .updateTable('nppa_events')
      .set({ locked_until: until, locked_by: owner })
      .where('event_id', 'in', ids)
      .where('status', '=', 'pending')
      .where('locked_until', '<=', now)
      .returning('event_id')
      .execute();
    return new Set(rows.map((r) => r.event_id));
  }

  /** Gives back claims this owner will not send. */
  async unclaim(ids: string[], owner: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.updateTable('nppa_events').set({ locked_until: 0, locked_by: null }).where('event_id', 'in', ids).where('locked_by', '=', owner).execute();
  }

  /** Accepted by the national system: uploaded, with the `ot` and identity actually sent. Guarded by the claim. */
  async markUploaded(q: Q, ids: string[], owner: string, sent: { shiftMs: number; pi: string }, now: number): Promise<number> {
    const { shiftMs } = sent;
    if (ids.length === 0) return 0;
    const r = await q
      .updateTable('nppa_events')
      .set({
        status: 'uploaded',
        uploaded_at: now,
        // A literal, so both databases do integer arithmetic (a bound JS number is REAL in SQLite).
        sent_ot: sql<number>`(ot_ms + ${sql.lit(Math.trunc(shiftMs))}) / 1000`,
        sent_pi: sent.pi,
        locked_until: 0,
        locked_by: null,
        attempts: sql<number>`attempts + 1`,
      })
      .where('event_id', 'in', ids)
      .where('locked_by', '=', owner)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /** Not accepted this time: back in the queue at `nextAttemptAt`, with the error recorded. */
  async reschedule(
    q: Q,
    ids: string[],
    owner: string,
    f: { nextAttemptAt: number; errcode: number | null; error: string; retime?: boolean },
  ): Promise<void> {
    if (ids.length === 0) return;
    await q
      .updateTable('nppa_events')
      .set({
        next_attempt_at: f.nextAttemptAt,
        errcode: f.errcode,
        last_error: f.error.slice(0, 500),
        attempts: sql<number>`attempts + 1`,
        locked_until: 0,
        locked_by: null,
        ...(f.retime ? { retime: sql<number>`retime + 1` } : {}),
      })
      .where('event_id', 'in', ids)
      .where('locked_by', '=', owner)
      .where('status', '=', 'pending')
      .execute();
  }

  /** Refused for good (a per-item error other than bad time): shown to the operator. */
  async markFailed(q: Q, ids: string[], owner: string, errcode: number, error: string): Promise<void> {
    if (ids.length === 0) return;
    await q
      .updateTable('nppa_events')
      .set({ status: 'failed', errcode, last_error: error.slice(0, 500), attempts: sql<number>`attempts + 1`, locked_until: 0, locked_by: null })
      .where('event_id', 'in', ids)
      .where('locked_by', '=', owner)
      .where('status', '=', 'pending')
      .execute();
  }

  /** The game has no credentials any more: its pending events are not uploaded. */
  async skipPending(gameId: string, now: number): Promise<void> {
    await this.db
      .updateTable('nppa_events')
      .set({ status: 'skipped', last_error: 'national-system credentials were removed from the game', locked_until: 0, locked_by: null })
      .where('game_id', '=', gameId)
      .where('status', '=', 'pending')
      .where('locked_until', '<=', now)
      .execute();
  }

  /**
   * One uploader per game at a time (the rate limit is per game): a renewable lease, never
   * given while the game is paused. Returns the game's upload state, or null.
   */
  async acquireLease(gameId: string, owner: string, now: number, until: number): Promise<NppaLeaseRow | null> {
    await this.db
      .insertInto('nppa_leases')
      .values({ game_id: gameId, owner: '', expires_at: 0, paused_until: 0, shift_ms: 0, shift_at: 0, last_ot: 0 })
      .onConflict((oc) => oc.column('game_id').doNothing())
      .execute();
    const row = await this.db
      .updateTable('nppa_leases')
      .set({ owner, expires_at: until })
      .where('game_id', '=', gameId)
      .where('paused_until', '<=', now)
      .where((eb) => eb.or([eb('owner', '=', owner), eb('expires_at', '<=', now)]))
      .returningAll()
      .executeTakeFirst();
    return row ?? null;
  }

  /** The game sends nothing before `until` (every process: acquireLease and dueGames check it). */
  async pauseGame(q: Q, gameId: string, owner: string, until: number): Promise<void> {
    await q.updateTable('nppa_leases').set({ paused_until: until }).where('game_id', '=', gameId).where('owner', '=', owner).execute();
  }

  /** After a batch was answered: the backlog's shift and the latest `ot` accepted for the game. */
  async saveProgress(q: Q, gameId: string, owner: string, p: { shiftMs: number; shiftAt: number; lastOt: number }): Promise<void> {
    await q
      .updateTable('nppa_leases')
      .set({ shift_ms: p.shiftMs, shift_at: p.shiftAt, last_ot: p.lastOt })
      .where('game_id', '=', gameId)
      .where('owner', '=', owner)
      .execute();
  }

  /** Gives back every game's lease this owner holds (on stop): another process may take them. */
  async releaseLeases(owner: string): Promise<void> {
    await this.db.updateTable('nppa_leases').set({ expires_at: 0 }).where('owner', '=', owner).execute();
  }

  /** Operator view: a game's events, newest first, keyset paging on event_id. */
  listEvents(gameId: string, f: { status?: NppaEventStatus; limit: number; before?: string }): Promise<NppaEventRow[]> {
    let q = this.db.selectFrom('nppa_events').selectAll().where('game_id', '=', gameId);
    if (f.status) q = q.where('status', '=', f.status);
    if (f.before) q = q.where('event_id', '<', f.before);
    return q.orderBy('event_id', 'desc').limit(f.limit).execute();
  }

  async countEvents(gameId: string): Promise<Record<NppaEventStatus, number>> {
    const rows = await this.db
      .selectFrom('nppa_events')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('game_id', '=', gameId)
      .groupBy('status')
      .execute();
    const out: Record<NppaEventStatus, number> = { pending: 0, uploaded: 0, failed: 0, skipped: 0 };
    for (const r of rows) out[r.status] = Number(r.n);
    return out;
  }
}
