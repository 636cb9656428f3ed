import type { NppaEventRow } from '../../src/compliance/store.js';

/** A pending behaviour event row of game `g` (player `c-<session>`), for buildBatch and its kin. */
export function eventRow(session: string, bt: number, otMs: number, extra: Partial<NppaEventRow> = {}): NppaEventRow {
  return {
    event_id: `e-${session}-${bt}`,
    game_id: 'g',
    session_id: session,
    combo_id: `c-${session}`,
    bt,
    ot_ms: otMs,
    status: 'pending',
    attempts: 0,
    next_attempt_at: 0,
    last_error: null,
    created_at: otMs,
    uploaded_at: null,
    locked_until: 0,
    locked_by: null,
    sent_ot: null,
    sent_pi: null,
    errcode: null,
    retime: 0,
    ...extra,
  };
}
