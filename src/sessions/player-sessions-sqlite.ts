import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { SESSIONS } from '../db/player-index-progress.js';
import { playerConditions, playerRowsSqlite } from '../db/player-rows-sqlite.js';
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
 * SQLite: a player's sessions, newest first by (created_at, game_id, session_id), from the
 * player index beside the database and the sessions it has not reached yet
 * (db/player-rows-sqlite.ts): exact whatever the worker's lag.
 */
export function playerSessionsSqlite(q: Q, f: PlayerSessionsFilter): Promise<SessionRow[]> {
  return playerRowsSqlite<SessionRow>(q, {
    table: SESSIONS,
    gameId: f.gameId,
    entry: (t) => conditions(t, f),
    row: (t) => openCondition(t, f),
    order: ['created_at', 'game_id', 'session_id'],
    limit: f.limit,
  });
}

/** The player, range and cursor conditions on table alias `t`. */
function conditions(t: string, f: PlayerSessionsFilter): RawBuilder<unknown> {
  const a = f.after;
  return playerConditions(t, f.comboId, f.since, a && {
    createdAt: a.createdAt,
    tie: (c) => sql`${c('game_id')} < ${a.gameId} or (${c('game_id')} = ${a.gameId} and ${c('session_id')} < ${a.sessionId})`,
  });
}

function openCondition(t: string, f: PlayerSessionsFilter): RawBuilder<unknown> {
  if (f.open === undefined) return sql``;
  return f.open ? sql` and ${sql.ref(`${t}.left_at`)} is null` : sql` and ${sql.ref(`${t}.left_at`)} is not null`;
}
