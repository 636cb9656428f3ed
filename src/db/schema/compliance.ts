// Table types (db/schema.ts): sessions, players and the national system (NPPA) upload queue.

/**
 * Sessions are compliance data and are never deleted; on SQLite the player index beside the
 * database (db/player-index.ts) also relies on it: a new row's rowid is above every committed one.
 * A retention that deleted sessions would have to keep the row with the largest rowid.
 */
export interface SessionsTable {
  game_id: string;
  session_id: string;
  combo_id: string;
  entered_at: number | null;
  left_at: number | null;
  close_reason: 'leave' | 'timeout' | null;
  created_at: number;
}

export interface NppaEventsTable {
  event_id: string;
  game_id: string;
  session_id: string;
  combo_id: string;
  bt: number;
  ot_ms: number;
  status: 'pending' | 'uploaded' | 'failed' | 'skipped';
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  uploaded_at: number | null;
  /** Claim of the uploader that is sending the event (0 / null: unclaimed). */
  locked_until: number;
  locked_by: string | null;
  /** The `ot` (Unix seconds) actually accepted, when re-timed; ot_ms keeps the original. */
  sent_ot: number | null;
  /** The national system's error code of the last failed attempt. */
  errcode: number | null;
  /** Times the event was answered 3005 (bad time) and re-timed: each send moves it 5 s further back. */
  retime: number;
  /** The identity it was accepted with: the `pi`, '' for a guest; null until accepted (migration 0007). */
  sent_pi: string | null;
}

/** Per game: which process uploads (a lease) and the upload state all processes share. */
export interface NppaLeasesTable {
  game_id: string;
  owner: string;
  expires_at: number;
  /** The game sends nothing before this (Unix ms): a 1006 block, a back-off, a backlog's pace. */
  paused_until: number;
  /** Delay added to the recorded times of the game's backlog (ms) as of shift_at, 0 when none. */
  shift_ms: number;
  /** When shift_ms was saved (Unix ms): it shrinks from then (upload-batch.ts, CATCH_UP). */
  shift_at: number;
  /** The latest `ot` (Unix s) accepted for the game. */
  last_ot: number;
}

export interface PlayersTable {
  game_id: string;
  combo_id: string;
  pi: string | null;
  birth_date: string | null;
  banned: number;
  created_at: number;
  updated_at: number;
}
