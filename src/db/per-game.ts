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
 * The first rows across every game (newest for a listing, oldest for a sweep), by merging one
 * page per game: `page(gameId)` is the query (filter, cursor, order, limit) for one game, or for
 * the whole table when called with undefined (no game exists, or more than MAX_MERGED_GAMES
 * do); `order` puts the same order and limit on the merged rows. Each per-game page is an index
 * range read in order, where one query over the table would sort every matching row
 * (docs/benchmarks.md, "Scale").
 */
export async function acrossGames<O>(
  q: Q,
  page: (gameId: string | undefined) => SelectQueryBuilder<DB, any, O>,
  order: (merged: SelectQueryBuilder<any, any, O>) => SelectQueryBuilder<any, any, O>,
): Promise<O[]> {
  const games = await q.selectFrom('games').select('game_id').orderBy('game_id').limit(MAX_MERGED_GAMES + 1).execute();
  if (games.length === 0 || games.length > MAX_MERGED_GAMES) return page(undefined).execute();
  return merged(q, games.map((g) => g.game_id), page, order);
}

/**
 * Up to `limit` rows from every game, however many games there are: one merged query (as in
 * acrossGames) per MAX_MERGED_GAMES games, in game order, until `limit` rows are found. Rows are
 * in `order` within each group of games only. For work that runs often and needs every matching
 * row eventually, not the first in one order (the timeout sweep): it never falls back to a
 * query over the whole table.
 */
export async function everyGame<O>(
  q: Q,
  limit: number,
  page: (gameId: string, limit: number) => SelectQueryBuilder<DB, any, O>,
  order: (merged: SelectQueryBuilder<any, any, O>, limit: number) => SelectQueryBuilder<any, any, O>,
): Promise<O[]> {
  const games = (await q.selectFrom('games').select('game_id').orderBy('game_id').execute()).map((g) => g.game_id);
  const found: O[] = [];
  for (let i = 0; i < games.length && found.length < limit; i += MAX_MERGED_GAMES) {
    const left = limit - found.length;
    found.push(...(await merged(q, games.slice(i, i + MAX_MERGED_GAMES), (g) => page(g, left), (m) => order(m, left))));
  }
  return found;
}

/** One query: each game's page, merged in `order`. */
function merged<O>(
  q: Q,
  gameIds: string[],
  page: (gameId: string) => SelectQueryBuilder<DB, any, O>,
  order: (merged: SelectQueryBuilder<any, any, O>) => SelectQueryBuilder<any, any, O>,
): Promise<O[]> {
  const parts = gameIds.map((g, i) => q.selectFrom(page(g).as(`g${i}`)).selectAll());
  const union = parts.slice(1).reduce((u, p) => u.unionAll(p), parts[0]!);
  return order(q.selectFrom(union.as('m')).selectAll() as SelectQueryBuilder<any, any, O>).execute();
}
