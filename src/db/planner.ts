import { sql, type Kysely, type Transaction } from 'kysely';
import type { DB } from './schema.js';

type Q = Kysely<DB> | Transaction<DB>;

/**
 * Runs an operator listing so that PostgreSQL reads each game's page in the listing's order from
 * the index made for it ((game_id, status, created_at, ...) for a status), never by sorting what
 * another index found (on SQLite, `run(db)` as it is: its plans are checked by the tests).
 *
 * Why: a status such as `created` or `pending` can be rare in the table's statistics (orders and
 * notifications leave it within minutes) and common when it is listed (a burst since the last
 * ANALYZE). Estimating one row, the planner takes the smaller index that starts with `status`
 * ((status, expires_at), (status, next_attempt_at)), reads every such row of every game and
 * sorts them: milliseconds for one game, seconds for a listing across hundreds of games, at
 * tens of thousands of such rows. With sorts priced out for the statement
 * (SET LOCAL, this transaction only), the plans that read an index in order win; the one sort
 * left, merging the games' pages, is in every plan, so it decides nothing.
 *
 * Only for filters that such an index serves in order (a status, with a game for
 * notifications; sessions without a filter, from the open and closed indexes): for others the
 * plan without a sort may be a walk of the whole table. Nor does it make every plan good: a
 * status common in the table but absent from one large game is looked for by walking a time
 * index in the listing's order (the table's or the game's), reading every row of it, a plan
 * without a sort that the planner takes with or without these settings. The statistics on
 * (game_id, status) of migration 0010 tell it which statuses a game has; they apply where the
 * game is a value (one game's listing), not across games, where each game's page is planned
 * once for all games: there the mistake remains. `postgres`: the store's dialect (DatabaseStore).
 */
export async function inIndexOrder<T>(postgres: boolean, db: Q, run: (q: Q) => Promise<T>): Promise<T> {
  // Inside a caller's transaction the settings would outlive the listing: left as planned.
  if (!postgres || db.isTransaction) return run(db);
  return (db as Kysely<DB>).transaction().execute(async (trx) => {
    await sql`set local enable_sort = off`.execute(trx);
    await sql`set local enable_incremental_sort = off`.execute(trx);
    // A priced-out sort costs 10^10: past jit_above_cost, which would compile the statement
    // (tens of milliseconds) to run a page of 50 rows.
    await sql`set local jit = off`.execute(trx);
    return run(trx);
  });
}
