import { describe, expect, it } from 'vitest';
import { HostLimit } from '../../src/notifications/host-limit.js';

const fast = (inflight: number) => ({ ok: true, latencyMs: 2, inflight });

describe('HostLimit: each host\'s limit of notification attempts in flight', () => {
  it('starts at 16, within the floor and the ceiling', () => {
    expect(new HostLimit({ min: 2, max: 128 }).limit).toBe(16);
    expect(new HostLimit({ min: 2, max: 4 }).limit).toBe(4);
    expect(new HostLimit({ min: 32, max: 64 }).limit).toBe(32);
  });

  it('grows while the host answers quickly and the limit is in use, up to the ceiling', () => {
    const l = new HostLimit({ min: 2, max: 40 });
    for (let i = 0; i < 10; i++) l.record(fast(l.limit));
    expect(l.limit).toBe(26); // slow start: one per answer
    for (let i = 0; i < 100; i++) l.record(fast(l.limit));
    expect(l.limit).toBe(40);
  });

  it('does not grow while less than half of it is in use (no evidence the host takes more)', () => {
    const l = new HostLimit({ min: 2, max: 128 });
    for (let i = 0; i < 100; i++) l.record(fast(7));
    expect(l.limit).toBe(16);
  });

  it('shrinks on an error or a time-out, once per round of answers, down to the floor', () => {
    const l = new HostLimit({ min: 3, max: 128 });
    l.record({ ok: false, latencyMs: 1, inflight: 16 });
    expect(l.limit).toBe(11);
    // The other answers of that round (sent before the decrease) change nothing.
    for (let i = 0; i < 15; i++) l.record({ ok: false, latencyMs: 1, inflight: 16 });
    expect(l.limit).toBe(11);
    for (let i = 0; i < 200; i++) l.record({ ok: false, latencyMs: 1, inflight: l.limit });
    expect(l.limit).toBe(3);
  });

  it('after a decrease, grows by one per round of answers (not one per answer)', () => {
    const l = new HostLimit({ min: 2, max: 128 });
    l.record({ ok: false, latencyMs: 1, inflight: 1 });
    expect(l.limit).toBe(11);
    for (let i = 0; i < 11; i++) l.record(fast(11));
    expect(l.limit).toBe(12);
  });

  it('shrinks when the latency rises well above the host\'s usual one', () => {
    const l = new HostLimit({ min: 2, max: 128 });
    for (let i = 0; i < 50; i++) l.record({ ok: true, latencyMs: 5, inflight: 7 });
    expect(l.limit).toBe(16);
    let answers = 0;
    while (l.limit >= 16 && answers < 20) {
      l.record({ ok: true, latencyMs: 400, inflight: 8 });
      answers++;
    }
    expect(l.limit).toBeLessThan(16);
    // A host answering in 1 ms or 3 ms answers at once: no decrease for that.
    const quick = new HostLimit({ min: 2, max: 128 });
    for (let i = 0; i < 50; i++) quick.record({ ok: true, latencyMs: i % 2 ? 1 : 3, inflight: 4 });
    expect(quick.limit).toBe(16);
  });
});
