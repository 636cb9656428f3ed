import { sql, type Expression, type Kysely, type SelectQueryBuilder, type Transaction } from 'kysely';
import type { DB } from './schema.js';

type Q = Kysely<DB> | Transaction<DB>;

/**
 * The first rows across every game, each game's read through a per-game index, for listings
 * without a game and the timeout sweep. `page(gameId)` is one game's query on `table` (filter,
 * cursor, order, limit; every column selected), with `gameId` a reference to the game it is
 * joined to; `order` puts the same order and limit on the rows of all games.
 *
 * One statement, whatever the number of games: every game is joined to its page laterally
 * (PostgreSQL's LATERAL; SQLite has none, so there each game picks its page's rows by rowid
 * through a correlated subquery). Each page is an index range read in order, where one query
 * over the table would sort every matching row, and the database plans the page once. A
 * UNION ALL of one page per game would be planned afresh for every game, a cost that grows with
 * the number of games, empty or not (tens to hundreds of milliseconds at 200 games).
 * `postgres`: the store's dialect (DatabaseStore).
 */
export function acrossGames<O>(
  postgres: boolean,
  q: Q,
  table: 'orders' | 'sessions',
  page: (gameId: Expression<string>) => SelectQueryBuilder<DB, any, O>,
  order: (rows: SelectQueryBuilder<any, any, O>) => SelectQueryBuilder<any, any, O>,
): Promise<O[]> {
  return acrossGamesQuery(postgres, q, table, page, order).execute();
}

/** acrossGames' statement, not yet run: to be read as a subquery of a larger one. */
export function acrossGamesQuery<O>(
  postgres: boolean,
  q: Q,
  table: 'orders' | 'sessions',
  page: (gameId: Expression<string>) => SelectQueryBuilder<DB, any, O>,
  order: (rows: SelectQueryBuilder<any, any, O>) => SelectQueryBuilder<any, any, O>,
): SelectQueryBuilder<any, any, O> {
  const gameId = sql.ref<string>('g.game_id');
  // Typed loosely: the joined table is the caller's, and the rows are the page's (O).
  const games = q.selectFrom('games as g') as unknown as SelectQueryBuilder<any, any, {}>;
  const joined =
    postgres
      ? games.innerJoinLateral(page(gameId).as('m'), (join) => join.onTrue()).selectAll('m')
      : games
          .innerJoin(`${table} as m`, (join) => join.on(sql`m.rowid`, 'in', page(gameId).clearSelect().select(sql`rowid`.as('r'))))
          .selectAll('m');
  return order(q.selectFrom(joined.as('x')).selectAll() as SelectQueryBuilder<any, any, O>);
}
