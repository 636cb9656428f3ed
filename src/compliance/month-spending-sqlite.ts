import { sql, type Kysely, type Transaction } from 'kysely';
import { readsDirectly } from '../db/direct.js';
import { run } from '../db/player-rows-sqlite.js';
import type { DB } from '../db/schema.js';
import { playerOrdersSqlite } from '../orders/player-orders-sqlite.js';

type Q = Kysely<DB> | Transaction<DB>;

/** What a month's spending is summed from: a player's CNY orders that may count. */
export interface SpendingRow {
  order_id: string;
  status: 'created' | 'paid' | 'delivered';
  expires_at: number;
  paid_at: number | null;
  amount: number;
}

/**
 * SQLite: the player's CNY orders created at or after `from` that may count towards a month's
 * spending (created, paid or delivered), as `q` sees them (inside the order's transaction, the
 * orders written earlier in it too).
 *
 * The orders' player key is in the player index beside the database (db/player-index.ts),
 * attached to the read-only connection only (`root`'s direct connection; in memory, the one
 * connection, where `q` reads it). So the player's orders are found there first, then read again
 * by key in `q`, with every order past the highest rowid seen before that: an order committed
 * since, or written in `q`'s own transaction, has a higher rowid (SQLite gives a new row the
 * largest rowid yet; orders are never deleted), so none is missed, and that range is only the
 * newest few rows.
 */
export async function spendingRowsSqlite(root: Kysely<DB>, q: Q, gameId: string, comboId: string, from: number): Promise<SpendingRow[]> {
  const reader = readsDirectly(root) ? root : q;
  const top = (await run<{ top: number | null }>(reader, sql`select max(rowid) as top from orders`))[0]?.top ?? 0;
  const seen = await playerOrdersSqlite<{ order_id: string }>(reader, { gameId, comboId, since: from }, (t) => sql`${sql.ref(`${t}.order_id`)}, ${sql.ref(`${t}.created_at`)}`);
  const counted = sql`currency = 'CNY' and status in ('created', 'paid', 'delivered')`;
  return run<SpendingRow>(
    q,
    sql`select order_id, status, expires_at, paid_at, amount from orders
      where order_id in (select value from json_each(${JSON.stringify(seen.map((r) => r.order_id))})) and ${counted}
      union
      select order_id, status, expires_at, paid_at, amount from orders not indexed
      where rowid > ${top} and game_id = ${gameId} and combo_id = ${comboId} and created_at >= ${from} and ${counted}`,
  );
}
