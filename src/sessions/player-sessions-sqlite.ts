import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { executeDirect } from '../db/direct.js';
import { isDamagedFile, playerIndexDamaged } from '../db/player-index.js';
import type { DB } from '../db/schema.js';
import type { SessionRow } from './store.js';

type Q = Kysely<DB> | Transaction<DB>;

/** What a player's sessions are read by: a player, and optionally a game, a range and a page. */
export interface PlayerSessionsFilter {
  comboId: string;
  gameId?: string;
  open?: boolean;
  /** Only sessions created at or after this (Unix ms). */
  since?: number;
  /** Newest first, after this cursor's session. */
  after?: { createdAt: number; gameId: string; sessionId: string };
  limit?: number;
}

/**
 * SQLite: a player's sessions, newest first, from the player index beside the database
 * (db/player-index.ts) and the sessions it has not reached yet, in one statement (one snapshot
 * of both files):
 * - the index's entries, read in order from its key (game_id, combo_id, created_at, session_id),
 *   one range per game (without a game, every game's page, merged), each joined to its session
 *   by the sessions' primary key;
 * - the sessions past the rowid the index has reached (`progress.through`), read by rowid range:
 *   `not indexed` keeps SQLite from reading the game's whole primary key instead.
 * The two are disjoint (an entry is written with the rowid it reached, in one transaction), so
 * the page is exact whatever the worker's lag. Runs on the read-only connection, where the file
 * is attached (the root handle; in memory, the one connection).
 */
export async function playerSessionsSqlite(q: Q, f: PlayerSessionsFilter): Promise<SessionRow[]> {
  try {
    return await run(q, statement(f));
  } catch (e) {
    // The player index file is damaged past its first pages (a torn copy, a disk fault): it holds
    // nothing of its own, so the page is read from the sessions table alone, exact and slower.
    // The file is marked to be made again at the next start (db/player-index.ts).
    if (!isDamagedFile(e)) throw e;
    playerIndexDamaged(q);
    return run(q, sessionsOnly(f));
  }
}

async function run(q: Q, query: RawBuilder<SessionRow>): Promise<SessionRow[]> {
  const compiled = query.compile(q);
  const direct = executeDirect<SessionRow>(q, compiled.sql, compiled.parameters);
  return (await (direct ?? q.executeQuery<SessionRow>(compiled))).rows;
}

/** The same page from the sessions table alone (the player index unreadable). */
function sessionsOnly(f: PlayerSessionsFilter): RawBuilder<SessionRow> {
  const limit = f.limit === undefined ? sql`` : sql`limit ${f.limit}`;
  return sql<SessionRow>`select * from sessions where ${conditions('sessions', f)}${openCondition('sessions', f)}
    order by created_at desc, game_id desc, session_id desc ${limit}`;
}

function statement(f: PlayerSessionsFilter): RawBuilder<SessionRow> {
  const order = sql`order by created_at desc, game_id desc, session_id desc`;
  const limit = f.limit === undefined ? sql`` : sql`limit ${f.limit}`;
  // One game's entries in the page's order, joined to their sessions (`s`).
  const entries = (select: RawBuilder<unknown>, game: RawBuilder<unknown>) => sql`select ${select} from derived.session_players p
    join sessions s on s.game_id = p.game_id and s.session_id = p.session_id
    where p.game_id = ${game} and ${conditions('p', f)}${openCondition('s', f)}
    order by p.created_at desc, p.session_id desc ${limit}`;
  // Without a game, each game's page (as db/per-game.ts reads the tables: by rowid through a
  // correlated subquery, SQLite having no LATERAL), merged below.
  const indexed =
    f.gameId !== undefined
      ? entries(sql`s.*`, sql`${f.gameId}`)
      : sql`select m.* from games g join sessions m on m.rowid in (${entries(sql`s.rowid`, sql.ref('g.game_id'))})`;
  const tail = sql`select * from sessions not indexed
    where rowid > (select through from derived.progress) and ${conditions('sessions', f)}${openCondition('sessions', f)}
    ${order} ${limit}`;
  return sql<SessionRow>`select * from (${indexed}) union all select * from (${tail}) ${order} ${limit}`;
}

/** The player, game, range and cursor conditions on table alias `t`. */
function conditions(t: string, f: PlayerSessionsFilter): RawBuilder<unknown> {
  const c = (column: string) => sql.ref(`${t}.${column}`);
  const parts = [sql`${c('combo_id')} = ${f.comboId}`];
  if (f.gameId !== undefined && t !== 'p') parts.push(sql`${c('game_id')} = ${f.gameId}`);
  if (f.since !== undefined) parts.push(sql`${c('created_at')} >= ${f.since}`);
  const a = f.after;
  if (a) {
    // `created_at <=` first: a range the index can seek to (see the listing in store.ts).
    parts.push(sql`${c('created_at')} <= ${a.createdAt}`);
    parts.push(
      sql`(${c('created_at')} < ${a.createdAt} or ${c('game_id')} < ${a.gameId} or (${c('game_id')} = ${a.gameId} and ${c('session_id')} < ${a.sessionId}))`,
    );
  }
  return sql.join(parts, sql` and `);
}

function openCondition(t: string, f: PlayerSessionsFilter): RawBuilder<unknown> {
  if (f.open === undefined) return sql``;
  return f.open ? sql` and ${sql.ref(`${t}.left_at`)} is null` : sql` and ${sql.ref(`${t}.left_at`)} is not null`;
}
