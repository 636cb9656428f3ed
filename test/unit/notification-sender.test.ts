import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundClient } from '../../src/lib/outbound.js';
import { sendNotification } from '../../src/notifications/sender.js';
import { Receiver } from '../helpers/receiver.js';

// The host's share of an attempt's latency (SendResult.hostMs), which feeds its adaptive limit
// (host-limit.ts): the time the event loop sat waiting while the request was out, not the time
// it spent on the service's own work while the answer waited to be read.

const keys = new Map([['g_sender', ['sender-secret-0123456789']]]);
let receiver: Receiver;
const outbound = new OutboundClient({ blockPrivate: false });
beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
});
afterAll(async () => {
  await outbound.close();
  await receiver.close();
});

const send = (path: string) =>
  sendNotification(outbound, { gameId: 'g_sender', notifyUrl: `${receiver.url}${path}`, body: '{"type":"ship_order"}' }, 'sender-secret-0123456789', Date.now(), 10_000);

/** Holds the thread, as a long stretch of the service's own work would. */
function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // the event loop cannot read any answer meanwhile
  }
}

describe('sendNotification: the host\'s share of the latency', () => {
  it('leaves out the time the thread was busy with its own work while the answer waited', async () => {
    const pending = send('/at-once');
    busy(200);
    const r = await pending;
    expect(r.statusCode).toBe(200);
    expect(r.latencyMs).toBeGreaterThanOrEqual(200);
    // Rounded to whole ms each: the 200 ms the thread held are not the host's.
    expect(r.latencyMs - r.hostMs).toBeGreaterThanOrEqual(199);
    expect(r.hostMs).toBeGreaterThanOrEqual(0);
  });

  it('counts the time the host itself takes to answer', async () => {
    receiver.script('/slow', () => ({ kind: 'status', status: 200, delayMs: 150 }));
    const r = await send('/slow');
    expect(r.statusCode).toBe(200);
    expect(r.hostMs).toBeLessThanOrEqual(r.latencyMs);
    // The thread had nothing else to do while the host held its answer.
    expect(r.hostMs).toBeGreaterThanOrEqual(100);
  });
});
