import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver, status, until } from './helpers/receiver.js';
import { attemptRows, notificationRow, paidOrder } from './helpers/paid-orders.js';
import { createGame, startService, type TestGame, type TestService } from './helpers/service.js';

// Each notify_url host has an adaptive limit of attempts in flight (src/notifications/
// host-limit.ts, between NOTIFY_PER_HOST_CONCURRENCY_MIN and NOTIFY_PER_HOST_CONCURRENCY). A
// game whose host hangs or fails holds at most its own limit; another game's host answering
// at once gets its notifications delivered meanwhile.

const keys = new Map<string, string[]>();
let t: TestService;
beforeAll(async () => {
  t = await startService({
    env: {
      NOTIFY_CONCURRENCY: '8',
      NOTIFY_PER_HOST_CONCURRENCY: '4',
      NOTIFY_PER_HOST_CONCURRENCY_MIN: '1',
      NOTIFY_TIMEOUT_MS: '60000',
      NOTIFY_RETRY_BASE_MS: '50',
      NOTIFY_POLL_INTERVAL_MS: '20',
    },
  });
});
afterAll(async () => t?.stop());

async function game(): Promise<TestGame> {
  const g = await createGame(t);
  keys.set(g.gameId, [g.secret]);
  return g;
}

describe('per-host adaptive concurrency: a slow or failing game never takes the places of others', () => {
  it('with one host holding every request and another failing each at once, a third host\'s notifications are all delivered while the first still holds its requests', async () => {
    const slow = await new Receiver({ keys, now: () => Date.now() }).start();
    const failing = await new Receiver({ keys, now: () => Date.now() }).start();
    const fast = await new Receiver({ keys, now: () => Date.now() }).start();
    try {
      const [gs, gf, gq] = [await game(), await game(), await game()];
      slow.script('/slow', () => ({ kind: 'hang' }));
      failing.script('/failing', () => status(500));
      for (let i = 0; i < 20; i++) await paidOrder(t, gs, slow.url + '/slow');
      const failingIds: string[] = [];
      for (let i = 0; i < 20; i++) failingIds.push((await paidOrder(t, gf, failing.url + '/failing')).notificationId);
      // The signals: the slow host holds requests; the failing host has refused some.
      await until('the slow host to hold requests', () => slow.received.length >= 1);
      await until('the failing host to have answered 500s', () => failing.received.length >= 8);
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) ids.push((await paidOrder(t, gq, fast.url + '/fast')).notificationId);
      await until(
        'the fast host\'s notifications to succeed',
        async () => {
          for (const id of ids) if ((await notificationRow(t, id)).status !== 'succeeded') return false;
          return true;
        },
        30_000,
      );
      // Each delivered at its first attempt, while the slow host had answered nothing.
      for (const id of ids) expect(await attemptRows(t, id)).toHaveLength(1);
      expect(slow.received.every((r) => r.answered === 'hang')).toBe(true);
      // Neither bad host held more than its ceiling, whatever its backlog.
      expect(slow.received.length).toBeLessThanOrEqual(4);
      expect(failing.maxInflight).toBeLessThanOrEqual(4);
      expect(fast.on('/fast')).toHaveLength(20);
    } finally {
      await slow.close();
      await failing.close();
      await fast.close();
    }
  });
});
