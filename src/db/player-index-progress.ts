/**
 * What the player index's main thread (player-index.ts) and its worker (player-index-worker.ts)
 * both need: the damaged-file marker and the check that the file still describes this database.
 */

/**
 * The user_version of a file found damaged while in use (a read or a pass failed with
 * SQLITE_CORRUPT): the next start deletes it and makes it again.
 */
export const DAMAGED = -1;

/** SQLite's answer when a file is not a database or is damaged. */
export const isDamagedFile = (e: unknown): boolean => /^SQLITE_(CORRUPT|NOTADB)/.test((e as { code?: string } | null)?.code ?? '');

/** The file's progress row: the rowid indexed through, and the session found at it then. */
export interface Progress {
  through: number;
  game_id: string | null;
  session_id: string | null;
}

/** A session's identity, as read at a rowid of the sessions table. */
export interface SessionAt {
  game_id: string;
  session_id: string;
}

/**
 * Whether the file still describes this database: the session at `through` is the one recorded
 * there. Not so when the database file was replaced (a restored backup, the file kept) or a
 * VACUUM renumbered rowids: the file is then emptied and filled again.
 */
export function progressHolds(p: Progress | undefined, sessionAt: (rowid: number) => SessionAt | undefined): boolean {
  if (!p || p.through === 0) return true;
  const at = sessionAt(p.through);
  return at !== undefined && at.game_id === p.game_id && at.session_id === p.session_id;
}
