/**
 * PostgreSQL restarted in the middle of a run (issue "Prove it", point 2): while create-order
 * and payments are loaded, the database server is restarted. Meanwhile the service answers
 * 503 service_unavailable (never 500), recovers by itself when the database is back (no
 * restart of the service), and loses nothing it acknowledged.
 *
 * It restarts the machine's PostgreSQL server, so it runs alone: only with TEST_FAULTS=1 and
 * TEST_DB=postgres (`TEST_LONG=1 npm test` runs it last, after everything else).
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DB } from '../helpers/db.js';
import { Receiver, until } from '../helpers/receiver.js';
import { createGame, signed, orderBody, startService, type TestGame, type TestService } from '../helpers/service.js';

const enabled = process.env.TEST_FAULTS === '1' && TEST_DB === 'postgres';

/** Restarts the server without blocking this process (the service under test runs in it). */
function restartPostgres(): Promise<void> {
  const version = readdirSync('/etc/postgresql')[0]!;
  return new Promise((resolve, reject) =>
    execFile('pg_ctlcluster', ['--skip-systemctl-redirect', version, 'main', 'restart', '-m', 'fast'], (err) => (err ? reject(err) : resolve())),
  );
}

describe.skipIf(!enabled)('PostgreSQL restarted mid-run', () => {
  let t: TestService;
  let game: TestGame;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startService({ env: { NOTIFY_POLL_INTERVAL_MS: '50', NOTIFY_RETRY_BASE_MS: '200' } });
    game = await createGame(t);
    receiver = await new Receiver({ keys: new Map([[game.gameId, [game.secret]]]), now: () => Date.now() }).start();
  });
  afterAll(async () => {
    await receiver?.close();
    await t?.stop();
  });

  it('answers 503 while the database is down, recovers by itself, and loses nothing', async () => {
    const acked = new Map<string, string>(); // reference -> order id
    const paid = new Set<string>();
    const statuses = new Map<number, number>();
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const body = orderBody({ reference_id: `pgr-${randomBytes(6).toString('hex')}`, notify_url: `${receiver.url}/notify` });
        try {
          const r = await signed(t, game, 'POST', '/v1/server/create-order', body);
          statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          if (r.status !== 200) continue;
          acked.set(body.reference_id as string, r.body.order_id);
          const p = await fetch(`${t.url}/v1/client/pay`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ order_token: r.body.order_token, channel: 'sandbox' }),
          });
          statuses.set(p.status, (statuses.get(p.status) ?? 0) + 1);
          if (p.status === 200) paid.add(r.body.order_id);
        } catch {
          /* a connection reset while the service is busy is the client's to retry */
        }
      }
    };
    const load = Promise.all(Array.from({ length: 4 }, worker));
    await until('some orders before the restart', () => (acked.size >= 20 ? true : null));
    await restartPostgres();
    const afterRestart = acked.size;
    // Recovery by itself: new orders are acknowledged again without restarting the service.
    await until('orders acknowledged after the restart', () => (acked.size >= afterRestart + 20 ? true : null), 60_000);
    stop = true;
    await load;

    expect(statuses.get(503) ?? 0, 'requests during the restart').toBeGreaterThan(0);
    expect(statuses.get(500) ?? 0).toBe(0);
    expect([...statuses.keys()].every((s) => s === 200 || s === 503)).toBe(true);
    // Every acknowledged order is stored, and every acknowledged payment is delivered.
    const db = t.service.database.db;
    const rows = await db.selectFrom('orders').select(['order_id', 'reference_id', 'status']).where('game_id', '=', game.gameId).execute();
    const byRef = new Map(rows.map((r) => [r.reference_id, r.order_id]));
    for (const [ref, id] of acked) expect(byRef.get(ref)).toBe(id);
    await until('every paid order delivered', async () => {
      const s = await db.selectFrom('orders').select(['order_id', 'status']).where('game_id', '=', game.gameId).execute();
      const st = new Map(s.map((r) => [r.order_id, r.status]));
      return [...paid].every((id) => st.get(id) === 'delivered') ? true : null;
    }, 60_000);
    const delivered = new Set(receiver.on('/notify').filter((r) => r.signatureProblem === null).map((r) => r.body.data.order_id));
    for (const id of paid) expect(delivered.has(id)).toBe(true);
  }, 180_000);
});
