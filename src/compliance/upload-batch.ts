import { nppaDeviceId, nppaSessionId } from './identity.js';
import type { BehaviourItem } from './nppa-client.js';
import type { NppaEventRow, NppaLeaseRow } from './store.js';

// What the uploader (uploader.ts) sends: which events of a game's queue may go now, and the
// batch's items with the times and identities they go with (nppa.md).

/** nppa.md: 1..128 items per request. */
export const MAX_BATCH = 128;
/** nppa.md: the earliest `ot` must be less than 180 s before `timestamps`; keep a margin. */
const MAX_AGE_MS = 170_000;
const WINDOW_MS = 180_000;
/** Each re-time sends the item this much further back (uploader.ts re-times up to MAX_RETIMES). */
const RETIME_STEP_S = 5;
/**
 * A backlog's kept shift shrinks by one second per CATCH_UP seconds of wall time: a game that
 * is never quiet for as long as the shift still catches up, within CATCH_UP times the shift (an
 * hour-long outage: ten hours), its items meanwhile sent about 9 % (1 / (CATCH_UP + 1)) closer
 * together than recorded. Kept whole until the queue drained, a busy game reported an outage's
 * delay for ever.
 */
export const CATCH_UP = 10;

/** The batch to send: its events in `no` order, the backlog's shift and each item's own. */
export interface Batch {
  events: NppaEventRow[];
  /** The shift of the game's backlog (whole seconds, >= 0), kept until the backlog drains. */
  shiftMs: number;
  /** Per event: the shift its `ot` was sent with (the backlog's, or less when re-timed). */
  shifts: number[];
  /** The batch's `timestamps` (ms), and the shift to keep as of then (not rounded). */
  ts: number;
  keptMs: number;
  items: BehaviourItem[];
}

/** The game's upload state shared by every process (nppa_leases). */
export type GameState = Pick<NppaLeaseRow, 'shift_ms' | 'shift_at' | 'last_ot'>;

/** The kept shift at `now`: what was saved, less one second per CATCH_UP seconds since. */
export function keptShift(state: Pick<GameState, 'shift_ms' | 'shift_at'>, now: number): number {
  return Math.max(0, state.shift_ms - Math.max(0, now - state.shift_at) / CATCH_UP);
}

/**
 * The shift of a game's backlog at `ts`: the one kept for it (shrinking, see CATCH_UP), grown
 * when its earliest item would fall out of the window (earliest less than 180 s before
 * `timestamps`; 170 s kept as a margin), by the least delay that brings it inside (so items
 * stay as early as possible). Whole seconds, rounded towards the past, so intervals in `ot`
 * seconds stay as recorded within a batch.
 */
export function backlogShift(earliestMs: number, keptMs: number, ts: number): number {
  return Math.max(Math.floor(keptMs / 1000) * 1000, Math.floor((ts - MAX_AGE_MS - earliestMs) / 1000) * 1000, 0);
}

/**
 * The events that may go now, from the head of the game's queue (recorded order): an unbroken
 * run spanning at most 170 s whose shifted times have come (never after `timestamps`), none
 * claimed by another process. When none may, `wakeAt` is when the head may: the gap to its
 * shifted time closes at 1 + 1/CATCH_UP, the clock running and the shift shrinking.
 */
export function sendable(backlog: NppaEventRow[], state: Pick<GameState, 'shift_ms' | 'shift_at'>, now: number): { events: NppaEventRow[]; wakeAt: number } {
  const head = backlog[0] as NppaEventRow;
  const shift = backlogShift(head.ot_ms, keptShift(state, now), now);
  const events: NppaEventRow[] = [];
  for (const e of backlog) {
    if (e.locked_until > now || e.ot_ms - head.ot_ms > MAX_AGE_MS || e.ot_ms + shift > now) break;
    events.push(e);
  }
  const gap = head.ot_ms + shift - now;
  return { events, wakeAt: head.locked_until > now ? head.locked_until : now + Math.max(1, Math.ceil((gap * CATCH_UP) / (CATCH_UP + 1))) };
}

/**
 * The items of a batch taken from the head of the game's queue: `ot` = recorded time + the
 * backlog's shift (none while the game keeps up). An item answered 3005 goes 5 s further back
 * per re-time, but stays inside the window, and a logout never goes before the latest `ot`
 * already accepted for the game (so never before its own login). No item goes after
 * `timestamps`: sendable() holds back items whose time has not come, so this only guards
 * against another process's clock running ahead.
 */
export function buildBatch(
  gameId: string,
  events: NppaEventRow[],
  pis: Map<string, string>,
  ts: number,
  state: GameState = { shift_ms: 0, shift_at: 0, last_ot: 0 },
  logins: Map<string, string> = new Map(),
): Batch {
  const kept = keptShift(state, ts);
  const shiftMs = backlogShift((events[0] as NppaEventRow).ot_ms, kept, ts);
  const minOt = Math.floor((ts - WINDOW_MS) / 1000) + 1;
  const maxOt = Math.floor(ts / 1000);
  const shifts: number[] = [];
  const items = events.map((e, i): BehaviourItem => {
    const recorded = Math.floor(e.ot_ms / 1000);
    let ot = recorded + shiftMs / 1000;
    if (e.retime > 0) ot = Math.max(ot - RETIME_STEP_S * e.retime, minOt);
    // Never before what the game already reported, as the shift shrinks between batches (so
    // the order stays as recorded), but for a re-timed login: it must go back (3005), and no
    // logout of its session can have been accepted before it.
    if (e.retime === 0 || e.bt === 0) ot = Math.max(ot, state.last_ot);
    ot = Math.min(ot, maxOt);
    shifts.push((ot - recorded) * 1000);
    // A logout goes with the identity its login was accepted with ('' a guest), so one session
    // is one identity to the national system; otherwise, the player's as recorded now.
    const sent = e.bt === 0 ? logins.get(e.session_id) : undefined;
    const pi = sent === undefined ? pis.get(e.combo_id) : sent || undefined;
    const base = { no: i + 1, si: nppaSessionId(gameId, e.session_id), bt: e.bt === 1 ? 1 : 0, ot } as const;
    return pi ? { ...base, ct: 0, pi } : { ...base, ct: 2, di: nppaDeviceId(e.combo_id) };
  });
  // Saved in ms, not whole seconds: rounded down at every batch, it would shrink a second per batch.
  return { events, ts, keptMs: Math.round(Math.max(kept, shiftMs)), shiftMs, shifts, items };
}
