import { describe, expect, it } from 'vitest';
import { checkTimestamp, parseTimestamp } from '../../src/signing/signer.js';

// PROTOCOL 1: Timestamp is YYYYMMDDTHHMMSSZ, a real UTC time; one that is not is unparsable
// (401). Date.UTC would silently roll these over (second 60 -> the next minute, day 0 -> the
// last day of the month before, month 0 -> December of the year before): each field's lower
// or upper bound must be checked by itself.
describe('signing timestamps that Date.UTC would roll over', () => {
  it.each([
    ['second 60', '20261122T093060Z'],
    ['day 00', '20261100T093000Z'],
    ['month 00', '20260022T093000Z'],
  ])('refuses %s (%s)', (_name, ts) => {
    expect(parseTimestamp(ts)).toBeNull();
    // What the rolled-over value would have been: even a server clock set exactly there refuses it.
    const rolled = Date.UTC(Number(ts.slice(0, 4)), Number(ts.slice(4, 6)) - 1, Number(ts.slice(6, 8)), Number(ts.slice(9, 11)), Number(ts.slice(11, 13)), Number(ts.slice(13, 15)));
    expect(checkTimestamp(ts, rolled)).toBe('Authorization Timestamp must be YYYYMMDDTHHMMSSZ');
  });

  it('accepts the edges just inside: second 59, day 01, month 01', () => {
    expect(parseTimestamp('20261122T093059Z')).toBe(Date.UTC(2026, 10, 22, 9, 30, 59));
    expect(parseTimestamp('20261101T093000Z')).toBe(Date.UTC(2026, 10, 1, 9, 30, 0));
    expect(parseTimestamp('20260122T093000Z')).toBe(Date.UTC(2026, 0, 22, 9, 30, 0));
  });
});
