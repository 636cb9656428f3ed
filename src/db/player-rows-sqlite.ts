import { sql, type Kysely, type RawBuilder, type Transaction } from 'kysely';
import { executeDirect } from './direct.js';
import { isDamagedFile, playerIndexDamaged } from './player-index.js';
import type { IndexedTable } from './player-index-progress.js';
import type { DB } from './schema.js';

type Q = Kysely<DB> | Transaction<DB>;

/**
 * A read of one player's rows of an indexed table (sessions, orders), newest first. The domain
 * says which rows; this module says how they are read from the player index (player-index.ts).
 */
export interface PlayerRowsQuery {
  table: IndexedTable;
  /** One game's rows, or every game's. */
  gameId?: string;
  /**
   * Conditions on the columns an entry has (game_id, combo_id, created_at, the table's key),
   * with the alias `t`; the player's combo_id among them. Applied to the entries and to the rows.
   */
  entry: (t: string) => RawBuilder<unknown>;
  /** Conditions on the row's other columns (alias `t`), each as ` and ...`; sql`` for none. */
  row: (t: string) => RawBuilder<unknown>;
  /** The page's order, newest first: columns an entry has, each read descending. */
  order: readonly string[];
  /** What to select of each row (alias `t`): `t.*` unless said. */
  select?: (t: string) => RawBuilder<unknown>;
  limit?: number;
}

/**
 * SQLite: a player's rows, newest first, from the player index beside the database and the
 * rows it has not reached yet, in one statement (one snapshot of both files):
 * - the index's entries, read in order from its key (game_id, combo_id, created_at, key), one
 *   range per game (without a game, every game's page, merged), each joined to its row by the
 *   table's primary key;
 * - the rows past the rowid the index has reached (`through`), read by rowid range: `not
 *   indexed` keeps SQLite from reading the game's whole primary key instead.
 * The two are disjoint (an entry is written with the rowid it reached, in one transaction), so
 * the page is exact whatever the worker's lag. Runs on the read-only connection, where the file
 * is attached (the root handle; in memory, the one connection).
 */
export async function playerRowsSqlite<R>(q: Q, query: PlayerRowsQuery): Promise<R[]> {
  try {
    return await run<R>(q, statement(query));
  } catch (e) {
    // The player index file is damaged past its first pages (a torn copy, a disk fault): it holds
    // nothing of its own, so the page is read from the table alone, exact and slower. The file
    // is marked to be made again at the next start (db/player-index.ts).
    if (!isDamagedFile(e)) throw e;
    playerIndexDamaged(q);
    return run<R>(q, tableOnly(query));
  }
}

/** Runs `query` on the handle's direct connection if it has one (db/direct.ts), else through Kysely. */
export async function run<R>(q: Q, query: RawBuilder<R>): Promise<R[]> {
  const compiled = query.compile(q);
  const direct = executeDirect<R>(q, compiled.sql, compiled.parameters);
  return (await (direct ?? q.executeQuery<R>(compiled))).rows;
}

/**
 * The conditions every player's read has on the columns an entry has (alias `t`): the player,
 * rows created at or after `since`, and rows after a cursor, newest first: created at
 * `createdAt` and after it by `tie` (the order's remaining columns), or created before it.
 */
export function playerConditions(
  t: string,
  comboId: string,
  since: number | undefined,
  after: { createdAt: number; tie: (c: (column: string) => RawBuilder<unknown>) => RawBuilder<unknown> } | undefined,
): RawBuilder<unknown> {
  const c = (column: string) => sql.ref(`${t}.${column}`);
  const parts = [sql`${c('combo_id')} = ${comboId}`];
  if (since !== undefined) parts.push(sql`${c('created_at')} >= ${since}`);
  if (after) {
    // `created_at <=` first: a range the index can seek to (an OR alone is a filter).
    parts.push(sql`${c('created_at')} <= ${after.createdAt}`);
    parts.push(sql`(${c('created_at')} < ${after.createdAt} or ${after.tie(c)})`);
  }
  return sql.join(parts, sql` and `);
}

const orderBy = (columns: readonly string[], t?: string) =>
  sql`order by ${sql.join(
    columns.map((c) => sql`${sql.ref(t ? `${t}.${c}` : c)} desc`),
    sql`, `,
  )}`;

const limitOf = (q: PlayerRowsQuery) => (q.limit === undefined ? sql`` : sql`limit ${q.limit}`);

/** Conditions on a row of the table (alias `t`): the game, the entry's and the row's own. */
const rowConditions = (q: PlayerRowsQuery, t: string) =>
  sql`${q.entry(t)}${q.gameId === undefined ? sql`` : sql` and ${sql.ref(`${t}.game_id`)} = ${q.gameId}`}${q.row(t)}`;

/** The same page from the table alone (the player index unreadable). */
function tableOnly<R>(q: PlayerRowsQuery): RawBuilder<R> {
  const t = q.table.name;
  const select = q.select?.(t) ?? sql`*`;
  return sql<R>`select ${select} from ${sql.table(t)} where ${rowConditions(q, t)} ${orderBy(q.order)} ${limitOf(q)}`;
}

function statement<R>(q: PlayerRowsQuery): RawBuilder<R> {
  const { name: table, entries: entriesTable, progress, key } = q.table;
  const limit = limitOf(q);
  // One game's entries in the page's order, joined to their rows (`s`).
  const entries = (select: RawBuilder<unknown>, game: RawBuilder<unknown>) => sql`select ${select} from ${sql.table(`derived.${entriesTable}`)} p
    join ${sql.table(table)} s on s.game_id = p.game_id and ${sql.ref(`s.${key}`)} = ${sql.ref(`p.${key}`)}
    where p.game_id = ${game} and ${q.entry('p')}${q.row('s')}
    ${orderBy(['created_at', key], 'p')} ${limit}`;
  // Without a game, each game's page (as db/per-game.ts reads the tables: by rowid through a
  // correlated subquery, SQLite having no LATERAL), merged below.
  const indexed =
    q.gameId !== undefined
      ? entries(q.select?.('s') ?? sql`s.*`, sql`${q.gameId}`)
      : sql`select ${q.select?.('m') ?? sql`m.*`} from games g join ${sql.table(table)} m on m.rowid in (${entries(sql`s.rowid`, sql.ref('g.game_id'))})`;
  const tail = sql`select ${q.select?.(table) ?? sql`*`} from ${sql.table(table)} not indexed
    where rowid > (select through from ${sql.table(`derived.${progress}`)}) and ${rowConditions(q, table)}
    ${orderBy(q.order)} ${limit}`;
  return sql<R>`select * from (${indexed}) union all select * from (${tail}) ${orderBy(q.order)} ${limit}`;
}
