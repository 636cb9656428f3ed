import { describe, expect, it } from 'vitest';
import { nppaDeviceId, nppaSessionId } from '../../src/compliance/identity.js';
import { checkSpending, spendingLimitFor } from '../../src/compliance/limits.js';
import type { NppaEventRow } from '../../src/compliance/store.js';
import { buildBatch } from '../../src/compliance/uploader.js';

const TS = 1_800_000_000_500;
function ev(session: string, bt: number, otMs: number, extra: Partial<NppaEventRow> = {}): NppaEventRow {
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
    errcode: null,
    retime: 0,
    ...extra,
  };
}
const inWindow = (ots: number[], ts: number) => ts - Math.min(...ots) * 1000 < 180_000 && Math.max(...ots) * 1000 <= ts;

describe('behaviour batches', () => {
  it('keeps recorded times that fit the window, numbers items 1..n, guests get di, players with pi get pi', () => {
    const b = buildBatch('g', [ev('a', 1, TS - 100_000), ev('a', 0, TS - 1000)], new Map([['c-a', 'p'.repeat(38)]]), TS);
    expect(b.shiftMs).toBe(0);
    expect(b.items).toEqual([
      { no: 1, si: nppaSessionId('g', 'a'), bt: 1, ot: Math.floor((TS - 100_000) / 1000), ct: 0, pi: 'p'.repeat(38) },
      { no: 2, si: nppaSessionId('g', 'a'), bt: 0, ot: Math.floor((TS - 1000) / 1000), ct: 0, pi: 'p'.repeat(38) },
    ]);
    const g = buildBatch('g', [ev('b', 1, TS)], new Map(), TS);
    expect(g.items[0]).toMatchObject({ ct: 2, di: nppaDeviceId('c-b') });
    expect(g.items[0]!.di).toHaveLength(32);
  });

  it('shifts old batches by the least whole-second delay, keeping intervals', () => {
    const events = [ev('a', 1, TS - 3_600_000), ev('b', 1, TS - 3_600_000 + 42_000), ev('a', 0, TS - 3_600_000 + 169_000)];
    const b = buildBatch('g', events, new Map(), TS);
    const ots = b.items.map((i) => i.ot);
    expect(b.shiftMs % 1000).toBe(0);
    expect(ots[1]! - ots[0]!).toBe(42);
    expect(ots[2]! - ots[0]!).toBe(169);
    expect(inWindow(ots, TS)).toBe(true);
    expect(TS - ots[0]! * 1000).toBeGreaterThanOrEqual(170_000);
  });

  it('brings items from the future back to timestamps, and moves 3005 items 5 s further back', () => {
    const f = buildBatch('g', [ev('a', 1, TS + 10_000)], new Map(), TS);
    expect(inWindow(f.items.map((i) => i.ot), TS)).toBe(true);
    const r = buildBatch('g', [ev('a', 1, TS - 1000, { retime: 1 })], new Map(), TS);
    expect(r.items[0]!.ot).toBeLessThanOrEqual(Math.floor((TS - 6000) / 1000));
    expect(inWindow(r.items.map((i) => i.ot), TS)).toBe(true);
  });

  it('si and di are stable 32-character values', () => {
    expect(nppaSessionId('g', 'x'.repeat(64))).toMatch(/^[0-9a-f]{32}$/);
    expect(nppaSessionId('g', 's')).toBe(nppaSessionId('g', 's'));
    expect(nppaSessionId('g', 's')).not.toBe(nppaSessionId('h', 's'));
    expect(nppaDeviceId('c')).toBe(nppaDeviceId('c'));
  });
});

describe('minors\' spending limits', () => {
  it('maps ages to brackets at their bounds', () => {
    expect(spendingLimitFor(7)).toMatchObject({ perOrder: 0, perMonth: 0 });
    expect(spendingLimitFor(8)).toMatchObject({ perOrder: 5000, perMonth: 20000 });
    expect(spendingLimitFor(15)).toMatchObject({ perOrder: 5000, perMonth: 20000 });
    expect(spendingLimitFor(16)).toMatchObject({ perOrder: 10000, perMonth: 40000 });
    expect(spendingLimitFor(17)).toMatchObject({ perOrder: 10000, perMonth: 40000 });
    expect(spendingLimitFor(18)).toBeNull();
  });

  it('checks per payment and per month, naming what remains', () => {
    const l = spendingLimitFor(10)!;
    expect(checkSpending(l, 10, 5000, 15000)).toEqual({ ok: true });
    expect(checkSpending(l, 10, 5001, 0)).toMatchObject({ ok: false, message: expect.stringContaining('20000 remains') });
    expect(checkSpending(l, 10, 1, 20000)).toMatchObject({ ok: false, message: expect.stringContaining('0 remains') });
    expect(checkSpending(spendingLimitFor(5)!, 5, 1, 0)).toMatchObject({ ok: false });
  });
});
