import { describe, expect, it } from 'vitest';
import { nppaDeviceId, nppaSessionId } from '../../src/compliance/identity.js';
import { checkSpending, spendingLimitFor } from '../../src/compliance/limits.js';
import type { NppaEventRow } from '../../src/compliance/store.js';
import { eventRow } from '../helpers/nppa-events.js';
import { buildBatch, CATCH_UP, keptShift, MAX_BATCH, sendable } from '../../src/compliance/upload-batch.js';

const TS = 1_800_000_000_500;
const ev = eventRow;
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

  it('a game that is never quiet catches up after an outage: order kept, intervals nearly, the shift back to none', () => {
    // The uploader's loop over pure functions: a login or logout every 5 s, the national system
    // unreachable for the first hour, then accepting everything.
    const OUTAGE = 3_600_000;
    const start = TS;
    let now = start + OUTAGE;
    const state = { shift_ms: 0, shift_at: 0, last_ot: 0 };
    let recorded = start;
    let n = 0;
    const queue: NppaEventRow[] = [];
    const record = () => {
      for (; recorded <= now; recorded += 5000) queue.push(ev(`s${n++}`, n % 2, recorded));
    };
    const sent: { recorded: number; ot: number; ts: number }[] = [];
    let caughtUpAt = 0;
    while (now < start + OUTAGE * (CATCH_UP + 3)) {
      record();
      if (queue.length === 0) {
        // As the uploader does: a drained queue ends the shift.
        Object.assign(state, { shift_ms: 0, shift_at: now });
        if (!caughtUpAt) caughtUpAt = now;
        now += 100;
        continue;
      }
      const { events, wakeAt } = sendable(queue.slice(0, MAX_BATCH), state, now);
      if (events.length === 0) {
        now = Math.max(wakeAt, now + 1);
        continue;
      }
      const b = buildBatch('g', events, new Map(), now, state);
      b.items.forEach((item, i) => sent.push({ recorded: events[i]!.ot_ms, ot: item.ot, ts: now }));
      Object.assign(state, { shift_ms: b.keptMs, shift_at: now, last_ot: Math.max(state.last_ot, ...b.items.map((x) => x.ot)) });
      queue.splice(0, events.length);
      if (!caughtUpAt && keptShift(state, now) === 0) caughtUpAt = now;
      now += 100;
    }
    // Caught up within CATCH_UP times the outage (plus the time to send the backlog).
    expect(caughtUpAt).toBeGreaterThan(0);
    expect(caughtUpAt - (start + OUTAGE)).toBeLessThanOrEqual(OUTAGE * CATCH_UP * 1.05);
    // Every item inside the window of its request, in recorded order, none before the one
    // before it, and each interval at most 1/(CATCH_UP + 1) shorter than recorded (+ 1 s
    // rounding), but one: where the queue first drains, the last few seconds of shift go at once.
    const shorter: number[] = [];
    for (const [i, x] of sent.entries()) {
      expect(inWindow([x.ot], x.ts)).toBe(true);
      if (i === 0) continue;
      const prev = sent[i - 1]!;
      expect(x.recorded).toBeGreaterThan(prev.recorded);
      expect(x.ot).toBeGreaterThanOrEqual(prev.ot);
      if (x.ot - prev.ot < Math.floor(((x.recorded - prev.recorded) / 1000) * (CATCH_UP / (CATCH_UP + 1))) - 1) shorter.push(i);
    }
    expect(shorter.length).toBeLessThanOrEqual(1);
    // Once caught up, items go with their recorded times.
    const last = sent[sent.length - 1]!;
    expect(last.ot).toBe(Math.floor(last.recorded / 1000));
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
