/**
 * What the player index's main thread (player-index.ts) and its worker (player-index-worker.ts)
 * both need: the tables it indexes, the damaged-file marker and the check that the file still
 * describes this database.
 */

/**
 * The user_version of a file found damaged while in use (a read or a pass failed with
 * SQLITE_CORRUPT): the next start deletes it and makes it again.
 */
export const DAMAGED = -1;

/** SQLite's answer when a file is not a database or is damaged. */
export const isDamagedFile = (e: unknown): boolean => /^SQLITE_(CORRUPT|NOTADB)/.test((e as { code?: string } | null)?.code ?? '');

/**
 * A table of the database whose rows the file indexes by player: the rows of `name` (each
 * identified by (game_id, `key`)) become entries (game_id, combo_id, created_at, `key`) of
 * `entries`, and `progress` records the rowid of `name` they reach and the row found there.
 */
export interface IndexedTable {
  name: 'sessions' | 'orders';
  key: 'session_id' | 'order_id';
  entries: 'session_players' | 'order_players';
  progress: 'progress' | 'order_progress';
}

export const SESSIONS: IndexedTable = { name: 'sessions', key: 'session_id', entries: 'session_players', progress: 'progress' };
export const ORDERS: IndexedTable = { name: 'orders', key: 'order_id', entries: 'order_players', progress: 'order_progress' };
export const INDEXED_TABLES = [SESSIONS, ORDERS] as const;

/** A progress row: the rowid indexed through, and the row found at it then. */
export interface Progress {
  through: number;
  game_id: string | null;
  key: string | null;
}

/** A row's identity, as read at a rowid of the indexed table. */
export interface RowAt {
  game_id: string;
  key: string;
}

/** Reads a table's progress row (as Progress) in the schema prefix `p` ('' or 'derived.'). */
export const progressSql = (t: IndexedTable, p = ''): string => `select through, game_id, ${t.key} as key from ${p}${t.progress}`;

/** Reads the identity of the row at a rowid of the table (as RowAt). */
export const rowAtSql = (t: IndexedTable): string => `select game_id, ${t.key} as key from ${t.name} where rowid = ?`;

/**
 * Whether the file still describes this database: the row at `through` is the one recorded
 * there. Not so when the database file was replaced (a restored backup, the file kept) or a
 * VACUUM renumbered rowids: the table's entries are then emptied and filled again.
 */
export function progressHolds(p: Progress | undefined, rowAt: (rowid: number) => RowAt | undefined): boolean {
  if (!p || p.through === 0) return true;
  const at = rowAt(p.through);
  return at !== undefined && at.game_id === p.game_id && at.key === p.key;
}
