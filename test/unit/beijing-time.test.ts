import { describe, expect, it } from 'vitest';
import { ageOn, beijingDate, beijingDayStart, beijingMonthStart, secondsPerBeijingDay } from '../../src/lib/beijing-time.js';

const bj = (s: string) => Date.parse(`${s}+08:00`);

describe('Beijing calendar', () => {
  it('days and months start at Beijing midnight', () => {
    expect(beijingDate(Date.parse('2026-11-22T16:00:00Z'))).toBe('2026-11-23');
    expect(beijingDate(Date.parse('2026-11-22T15:59:59.999Z'))).toBe('2026-11-22');
    expect(beijingDayStart(bj('2026-11-23T07:30:00'))).toBe(bj('2026-11-23T00:00:00'));
    expect(beijingMonthStart(bj('2026-12-01T00:00:00'))).toEqual({ start: bj('2026-12-01T00:00:00'), month: '2026-12' });
    expect(beijingMonthStart(bj('2026-11-30T23:59:59'))).toEqual({ start: bj('2026-11-01T00:00:00'), month: '2026-11' });
  });

  it('age counts full years on the Beijing date', () => {
    expect(ageOn('2016-11-23', bj('2026-11-22T23:59:59'))).toBe(9);
    expect(ageOn('2016-11-23', bj('2026-11-23T00:00:00'))).toBe(10);
    expect(ageOn('2008-02-29', bj('2026-02-28T12:00:00'))).toBe(17);
    expect(ageOn('2008-02-29', bj('2026-03-01T00:00:00'))).toBe(18);
  });

  it('splits a session across Beijing midnights', () => {
    const m = secondsPerBeijingDay([{ from: bj('2026-11-20T23:00:00'), to: bj('2026-11-22T01:30:00') }], 0, Infinity);
    expect([...m]).toEqual([
      ['2026-11-20', 3600],
      ['2026-11-21', 86400],
      ['2026-11-22', 5400],
    ]);
    const w = secondsPerBeijingDay([{ from: bj('2026-11-20T23:00:00'), to: bj('2026-11-21T01:00:00') }], bj('2026-11-21T00:00:00'), bj('2026-11-21T00:30:00'));
    expect([...w]).toEqual([['2026-11-21', 1800]]);
  });

  it('counts time covered by overlapping sessions once (a player on two devices)', () => {
    const m = secondsPerBeijingDay(
      [
        { from: bj('2026-11-21T10:00:00'), to: bj('2026-11-21T11:00:00') },
        { from: bj('2026-11-21T10:30:00'), to: bj('2026-11-21T10:45:00') }, // inside the first
        { from: bj('2026-11-21T10:50:00'), to: bj('2026-11-21T11:10:00') }, // overlapping its end
        { from: bj('2026-11-21T11:10:00'), to: bj('2026-11-21T11:20:00') }, // touching
        { from: bj('2026-11-21T09:00:00'), to: bj('2026-11-21T09:30:00') }, // apart, given out of order
      ],
      0,
      Infinity,
    );
    expect([...m]).toEqual([['2026-11-21', 3600 + 1200 + 1800]]);
  });
});
