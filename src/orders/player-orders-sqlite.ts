import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { ORDERS } from '../db/player-index-progress.js';
import { playerConditions, playerRowsSqlite } from '../db/player-rows-sqlite.js';
import type { DB, OrderStatus } from '../db/schema.js';
import type { OrderRow } from './store.js';

type Q = Kysely<DB> | Transaction<DB>;

/** What a player's orders are read by: a player, and optionally a game, a status, a range and a page. */
export interface PlayerOrdersFilter {
  comboId: string;
  gameId?: string;
  status?: OrderStatus;
  /** Only orders created at or after this (Unix ms). */
  since?: number;
  /** Newest first, after this cursor's order. */
  after?: { createdAt: number; orderId: string } | null;
  limit?: number;
}

/**
 * SQLite: a player's orders, newest first by (created_at, order_id), from the player index
 * beside the database and the orders it has not reached yet (db/player-rows-sqlite.ts): exact
 * whatever the worker's lag. `select`: the columns to read, every one unless said (the page's
 * order needs created_at and order_id).
 */
export function playerOrdersSqlite<R = OrderRow>(q: Q, f: PlayerOrdersFilter, select?: (t: string) => RawBuilder<unknown>): Promise<R[]> {
  return playerRowsSqlite<R>(q, {
    table: ORDERS,
    gameId: f.gameId,
    entry: (t) => conditions(t, f),
    row: (t) => (f.status === undefined ? sql`` : sql` and ${sql.ref(`${t}.status`)} = ${f.status}`),
    order: ['created_at', 'order_id'],
    select,
    limit: f.limit,
  });
}

/** The player, range and cursor conditions on table alias `t`. */
function conditions(t: string, f: PlayerOrdersFilter): RawBuilder<unknown> {
  const a = f.after;
  return playerConditions(t, f.comboId, f.since, a ? { createdAt: a.createdAt, tie: (c) => sql`${c('order_id')} < ${a.orderId}` } : undefined);
}
