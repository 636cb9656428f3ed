import { describe, expect, it } from 'vitest';
import { nppaDeviceId, nppaSessionId } from '../../src/compliance/identity.js';
import type { NppaEventRow } from '../../src/compliance/store.js';
import { eventRow } from '../helpers/nppa-events.js';
import { buildBatch } from '../../src/compliance/upload-batch.js';

// Whole seconds: T is an `ot` (s), T * 1000 a time in ms.
const T = 1_800_000_000;

function ev(id: string, session: string, bt: number, otMs: number, extra: Partial<NppaEventRow> = {}): NppaEventRow {
  return eventRow(session, bt, otMs, { event_id: id, ...extra });
}

describe('behaviour batches: order against what the game already reported', () => {
  // docs/compliance.md: "No item is sent before one the game already reported
  // (nppa_leases.last_ot): a session's logout never lands before its login."
  it('a logout built while the kept shift shrinks is never sent before the login accepted just before it (ot >= last_ot)', () => {
    // The login, recorded at T, was accepted at T + 100 with the backlog's 100 s shift, at the
    // moment its shifted time came.
    const loginTs = (T + 100) * 1000;
    const login = buildBatch('g', [ev('e1', 's', 1, T * 1000)], new Map(), loginTs, { shift_ms: 100_000, shift_at: loginTs, last_ot: 0 });
    expect(login.items[0]!.ot).toBe(T + 100);
    const state = { shift_ms: login.keptMs, shift_at: loginTs, last_ot: login.items[0]!.ot };
    // Its logout, recorded 0.5 s later, goes 300 ms after: the kept shift has shrunk to 99.97 s,
    // rounded to 99 s, which alone would put the logout at T + 99, before its login.
    const logout = buildBatch('g', [ev('e2', 's', 0, T * 1000 + 500)], new Map(), loginTs + 300, state);
    expect(logout.items[0]!.ot).toBeGreaterThanOrEqual(state.last_ot);
    expect(logout.items[0]!.ot).toBe(1_800_000_100);
    expect(logout.items[0]!.ot * 1000).toBeLessThanOrEqual(loginTs + 300);
  });

  it('an item of another session built after a larger accepted ot is not sent before it either', () => {
    const ts = (T + 100) * 1000 + 300;
    const b = buildBatch('g', [ev('e3', 'other', 1, T * 1000 + 500), ev('e4', 'other', 0, T * 1000 + 700)], new Map(), ts, {
      shift_ms: 99_990,
      shift_at: ts - 200,
      last_ot: T + 100,
    });
    for (const item of b.items) expect(item.ot).toBeGreaterThanOrEqual(T + 100);
  });
});

describe('behaviour batches: re-timed items stay inside the 180 s window', () => {
  // nppa.md: "the earliest `ot` in a batch must be less than 180 s before `timestamps`".
  // A re-timed item goes back 5 s per re-time, but never to exactly 180 s before.
  for (const [name, ts] of [
    ['timestamps on a whole second', T * 1000],
    ['timestamps 1 ms past a whole second', T * 1000 + 1],
    ['timestamps 999 ms past a whole second', T * 1000 + 999],
  ] as const) {
    it(`an item re-timed 5 times near the window's edge is less than 180 s before timestamps (${name})`, () => {
      for (const bt of [1, 0]) {
        // Recorded 160 s before: five re-times (25 s) would take it to 185 s before.
        const b = buildBatch('g', [ev(`e-${bt}`, 's', bt, ts - 160_000, { retime: 5 })], new Map(), ts);
        const ot = b.items[0]!.ot;
        expect(ts - ot * 1000, `bt ${bt}`).toBeLessThan(180_000);
        // ...and as far back as the window allows: the latest whole second that is inside it.
        expect(ts - (ot - 1) * 1000, `bt ${bt}`).toBeGreaterThanOrEqual(180_000);
      }
    });
  }
});

describe('behaviour item identifiers (docs/compliance.md "Items")', () => {
  // Vectors made with the documented command:
  //   printf 'g-vec\nsess-1' | sha256sum | cut -c1-32   -> dc637ab8e815228a00fa94ba6f6d6956
  //   printf 'di\nplayer-1' | sha256sum | cut -c1-32    -> 26d0ee2e314a3f8391a64bc98fa67d85
  it('si is the first 32 hex characters of SHA-256 of game_id + "\\n" + session_id', () => {
    expect(nppaSessionId('g-vec', 'sess-1')).toBe('dc637ab8e815228a00fa94ba6f6d6956');
  });

  it('di is the first 32 hex characters of SHA-256 of "di\\n" + combo_id', () => {
    expect(nppaDeviceId('player-1')).toBe('26d0ee2e314a3f8391a64bc98fa67d85');
  });

  it('buildBatch sends these si and di values on the wire items', () => {
    const b = buildBatch('g-vec', [{ ...ev('e5', 'sess-1', 1, T * 1000), combo_id: 'player-1' }], new Map(), T * 1000);
    expect(b.items[0]).toMatchObject({ si: 'dc637ab8e815228a00fa94ba6f6d6956', ct: 2, di: '26d0ee2e314a3f8391a64bc98fa67d85' });
  });
});
