import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * PostgreSQL: extended statistics (most common values) on (game_id, status) of orders and of
 * notifications, so that the planner knows which statuses each game has.
 *
 * Without them it multiplies the two columns' frequencies. A status common in the table but
 * absent from one large game (orders `created` in every game but that one; notifications
 * `succeeded` everywhere but a game whose endpoint fails) is then expected in tens of thousands
 * of that game's rows, and its operator listing (`game_id=..&status=..`, newest first) walks a
 * time index in the listing's order to find the first 50, the whole table's time index or the
 * game's, reading every row of it (seconds at a million rows), where the
 * (game_id, status, ...) index finds nothing at once.
 *
 * Target 1000 (most common values kept, of 300,000 sampled rows): one entry per (game, status)
 * pair, enough for every pair of about 170 games (6 order statuses; 250 games with the 4 of
 * notifications). The default 100 fixed the plan with 5 games, not with 201 (a few large games
 * and many small ones: 54 % of the rows in the list at 100, 82 % at 300, 99 % at 1000). The
 * larger sample makes each ANALYZE of these tables (autovacuum's too) take 3-8 s at 1 to 10
 * million rows instead of 0.5-1.6 s (2 cores).
 *
 * The ANALYZE here fills the new statistics at once rather than at autovacuum's next visit
 * (after a tenth of the table has changed): only the two columns (and the statistics built on
 * them), 300,000 sampled rows whatever the table's size: 2-10 s per table at 1 to 10 million
 * rows. It takes no lock that reads or writes wait for.
 *
 * SQLite has no such statistics: nothing to do there.
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const table of ['orders', 'notifications']) {
    const name = sql.id(`${table}_game_status`);
    await sql`create statistics if not exists ${name} (mcv) on game_id, status from ${sql.table(table)}`.execute(db);
    await sql`alter statistics ${name} set statistics 1000`.execute(db);
    await sql`analyze ${sql.table(table)} (game_id, status)`.execute(db);
  }
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
