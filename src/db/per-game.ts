import type { Kysely, SelectQueryBuilder, Transaction } from 'kysely';
import type { DB } from './schema.js';

type Q = Kysely<DB> | Transaction<DB>;

/**
 * Listings without a game filter read each game's newest rows through a per-game index and merge
 * them, for up to this many games (SQLite allows 500 terms in one compound SELECT); beyond, one
 * query filters the whole table.
 */
export const MAX_MERGED_GAMES = 200;

/**
 * The newest rows across every game, by merging one page per game: `page(gameId)` is the
 * listing's query (filter, cursor, order, limit) for one game, or for the whole table when
 * called with undefined (no game exists, or more than MAX_MERGED_GAMES do); `order` puts the
 * same order and limit on the merged rows. Each per-game page is an index range read in order,
 * where one query over the table would sort every matching row (docs/benchmarks.md, "Scale").
 */
export async function newestAcrossGames<O>(
  q: Q,
  page: (gameId: string | undefined) => SelectQueryBuilder<DB, any, O>,
  order: (merged: SelectQueryBuilder<any, any, O>) => SelectQueryBuilder<any, any, O>,
): Promise<O[]> {
  const games = await q.selectFrom('games').select('game_id').orderBy('game_id').limit(MAX_MERGED_GAMES + 1).execute();
  if (games.length === 0 || games.length > MAX_MERGED_GAMES) return page(undefined).execute();
  const parts = games.map((g, i) => q.selectFrom(page(g.game_id).as(`g${i}`)).selectAll());
  const merged = parts.slice(1).reduce((u, p) => u.unionAll(p), parts[0]!);
  return order(q.selectFrom(merged.as('m')).selectAll() as SelectQueryBuilder<any, any, O>).execute();
}
