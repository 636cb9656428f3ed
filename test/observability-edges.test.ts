import { once } from 'node:events';
import { renameSync } from 'node:fs';
import { sql } from 'kysely';
import type { Counter } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { TEST_DB } from './helpers/db.js';
import { createNppaGame, enter } from './helpers/nppa-game.js';
import { startNppaStandIn, type StandIn } from './helpers/nppa-stand-in.js';
import { FakeGm, createPartner, partnerGet, queryUri, role } from './helpers/partners.js';
import { Receiver, until } from './helpers/receiver.js';
import { admin, createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';
import { logSink } from './helpers/logs.js';
import { METRICS_TOKEN, sample } from './helpers/metrics.js';

/**
 * Operator-facing observability that docs/operations.md documents ("Metrics", "Logs"): labels,
 * units and meanings of the series, the METRICS_TOKEN check, and the 5xx log lines.
 */

async function scrape(t: TestService): Promise<string> {
  // A scrape that never answers fails the test here, not at the test's time-out.
  const r = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` }, signal: AbortSignal.timeout(8000) });
  expect(r.status).toBe(200);
  return r.text();
}

const started: TestService[] = [];
const cleanups: (() => Promise<void> | void)[] = [];
async function service(opts: Parameters<typeof startService>[0] = {}): Promise<TestService> {
  const t = await startService({ ...opts, env: { METRICS_TOKEN, ...opts.env } });
  started.push(t);
  return t;
}
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  for (const t of started.splice(0)) {
    await t.service.stop({ now: true });
    await t.stop();
  }
});

describe('/metrics series as documented', () => {
  it('with NODE_ID set, every series carries the node_id label', async () => {
    const t = await service({ env: { NODE_ID: '7' } });
    await fetch(`${t.url}/healthz`);
    const text = await scrape(t);
    expect(sample(text, 'combo_database_up', { node_id: '7' })).toBe(1);
    expect(sample(text, 'combo_http_requests_total', { method: 'GET', route: '/healthz', status: '200', node_id: '7' })).toBe(1);
    const samples = text.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(samples.length).toBeGreaterThan(20);
    expect(samples.filter((l) => !l.includes('node_id="7"'))).toEqual([]);
  });

  it('METRICS_TOKEN: only the Bearer scheme as spelled passes; "xBearer <token>" is 401', async () => {
    const t = await service();
    const get = (authorization: string) => fetch(`${t.url}/metrics`, { headers: { authorization } });
    expect((await get(`xBearer ${METRICS_TOKEN}`)).status).toBe(401);
    expect((await get(`NotBearer ${METRICS_TOKEN}`)).status).toBe(401);
    expect((await get(`Bearer ${METRICS_TOKEN}`)).status).toBe(200);
  });

  it('combo_rate_limited_total counts 429s by caller kind: partner, ip and token, not only game', async () => {
    const clock = new ManualClock();
    const t = await service({ clock, env: { CLIENT_RATE_LIMIT_PER_SECOND: '1', TRUST_PROXY: '127.0.0.1' } });
    const game = await createGame(t);
    // partner: one request a second.
    const partner = await createPartner(t, [game.gameId], { rate_limit_per_second: 1 });
    await partnerGet(t, partner, queryUri(game.gameId, 'nobody'));
    expect((await partnerGet(t, partner, queryUri(game.gameId, 'nobody'))).status).toBe(429);
    // ip: two client requests from one forwarded address (the token is garbage: the IP bucket comes first).
    const client = (body: object, ip: string) =>
      fetch(`${t.url}/v1/client/order`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': ip }, body: JSON.stringify(body) });
    await client({ order_token: 'not-a-token' }, '203.0.113.1');
    expect((await client({ order_token: 'not-a-token' }, '203.0.113.1')).status).toBe(429);
    // token: one order's token from two addresses.
    const order = await signed(t, game, 'POST', '/v1/server/create-order', orderBody());
    expect(order.status).toBe(200);
    expect((await client({ order_token: order.body.order_token }, '203.0.113.2')).status).toBe(200);
    expect((await client({ order_token: order.body.order_token }, '203.0.113.3')).status).toBe(429);

    const text = await scrape(t);
    expect(sample(text, 'combo_rate_limited_total', { kind: 'partner' })).toBe(1);
    expect(sample(text, 'combo_rate_limited_total', { kind: 'ip' })).toBe(1);
    expect(sample(text, 'combo_rate_limited_total', { kind: 'token' })).toBe(1);
    expect(sample(text, 'combo_rate_limited_total', { kind: 'game' })).toBeUndefined();
  });

  it('combo_notification_attempt_duration_seconds is in seconds: a receiver answering after 250 ms lands between 0.1 s and 1 s', async () => {
    const t = await service();
    const game = await createGame(t);
    const receiver = await new Receiver({ keys: new Map([[game.gameId, [game.secret]]]), now: () => Date.now() }).start();
    cleanups.push(() => receiver.close());
    receiver.script('/slow', () => ({ kind: 'status', status: 200, body: '{"ok":true}', delayMs: 250 }));
    const o = await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ notify_url: `${receiver.url}/slow` }));
    const paid = await fetch(`${t.url}/v1/client/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ order_token: o.body.order_token, channel: 'sandbox' }),
    });
    expect(paid.status).toBe(200);
    const text = await until('the delivery is counted', async () => {
      const s = await scrape(t);
      return (sample(s, 'combo_notification_attempts_total', { game_id: game.gameId, result: 'success' }) ?? 0) >= 1 ? s : null;
    });
    expect(sample(text, 'combo_payments_total', { game_id: game.gameId, status: 'accepted' })).toBe(1);
    const n = sample(text, 'combo_notification_attempt_duration_seconds_count')!;
    expect(n).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'combo_notification_attempt_duration_seconds_bucket', { le: '0.1' })).toBe(0);
    expect(sample(text, 'combo_notification_attempt_duration_seconds_bucket', { le: '1' })).toBe(n);
    const sum = sample(text, 'combo_notification_attempt_duration_seconds_sum')!;
    expect(sum / n).toBeGreaterThanOrEqual(0.2);
    expect(sum / n).toBeLessThan(1);
  });

  it('combo_database_up is 0 while the database cannot be read, and 1 again once it can', async () => {
    const t = await service();
    const db = t.service.database.db;
    expect(sample(await scrape(t), 'combo_database_up')).toBe(1);
    await sql`alter table nppa_events rename to nppa_events_away`.execute(db);
    cleanups.push(async () => {
      await sql`alter table nppa_events_away rename to nppa_events`.execute(db).catch(() => {});
    });
    expect(sample(await scrape(t), 'combo_database_up')).toBe(0);
    await sql`alter table nppa_events_away rename to nppa_events`.execute(db);
    expect(sample(await scrape(t), 'combo_database_up')).toBe(1);
  });

  it.skipIf(TEST_DB !== 'postgres')('combo_db_pool_connections{state="idle"} leaves out the connections in use', async () => {
    const t = await service();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inside!: () => void;
    const begun = new Promise<void>((r) => (inside = r));
    const trx = t.service.database.db.transaction().execute(async (trx) => {
      await sql`select 1`.execute(trx);
      inside();
      await held;
    });
    cleanups.push(async () => {
      release();
      await trx;
    });
    await begun;
    const text = await scrape(t);
    const total = sample(text, 'combo_db_pool_connections', { state: 'total' })!;
    const idle = sample(text, 'combo_db_pool_connections', { state: 'idle' })!;
    expect(total).toBeGreaterThanOrEqual(1);
    expect(idle).toBeLessThanOrEqual(total - 1);
    release();
    await trx;
    const after = await scrape(t);
    // The transaction's connection is back in the pool (the scrape's own counts ran on others).
    expect(sample(after, 'combo_db_pool_connections', { state: 'idle' })).toBeGreaterThanOrEqual(1);
  });
});

describe('national-system uploads in /metrics', () => {
  let standIn: StandIn;
  afterEach(async () => standIn?.close());

  it('counts a refused one-event batch as failure, its upload as success, and only pending events as pending', async () => {
    standIn = await startNppaStandIn();
    const t = await service({ env: { NPPA_BASE_URL: standIn.url, NPPA_POLL_INTERVAL_MS: '20', NPPA_RETRY_BASE_MS: '50' } });
    const game = await createNppaGame(t, standIn);
    standIn.hold.set(game.appId, { errcode: 1001, errmsg: 'system error' });
    await enter(t, game, 'p1', 's1');
    await until('a refused upload', () => (standIn.requests.some((r) => r.appId === game.appId) ? true : null));
    const refused = await until('the refused batch is counted', async () => {
      const s = await scrape(t);
      return (sample(s, 'combo_nppa_uploads_total', { result: 'failure' }) ?? 0) >= 1 ? s : null;
    });
    // Each refused batch held the one event.
    expect(sample(refused, 'combo_nppa_uploaded_events_total', { result: 'failure' })).toBe(sample(refused, 'combo_nppa_uploads_total', { result: 'failure' }));
    expect(sample(refused, 'combo_nppa_uploaded_events_total', { result: 'success' })).toBeUndefined();
    expect(sample(refused, 'combo_nppa_events_pending')).toBe(1);

    standIn.hold.delete(game.appId);
    const done = await until('the upload is counted', async () => {
      const s = await scrape(t);
      return sample(s, 'combo_nppa_uploads_total', { result: 'success' }) === 1 ? s : null;
    });
    expect(sample(done, 'combo_nppa_uploaded_events_total', { result: 'success' })).toBe(1);
    // The uploaded event is still in the table, no longer pending (a scrape reads the tables
    // before the counters: the one that saw the success may have read the row just before).
    const db = t.service.database.db;
    await until('the event is marked uploaded', async () => ((await db.selectFrom('nppa_events').select('status').execute()).map((r) => r.status).join() === 'uploaded' ? true : null));
    expect(sample(await scrape(t), 'combo_nppa_events_pending')).toBe(0);
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('SQLite: orders counted on a worker thread', () => {
  it('combo_sqlite_wal_checkpointed_pages_total counts pages copied, not checkpoints', async () => {
    const t = await service({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '10' } });
    const checkpointer = t.service.database.checkpointer!;
    const counter = t.service.metrics.registry.getSingleMetric('combo_sqlite_wal_checkpointed_pages_total') as Counter;
    let events = 0;
    let pages = 0;
    // Listener and starting value in one turn of the event loop (checkpoints arrive as messages).
    checkpointer.on('checkpoint', (n: number) => {
      events++;
      pages += n;
    });
    const start = (await counter.get()).values[0]?.value ?? 0;
    const game = await createGame(t);
    const checkpointed = once(checkpointer, 'checkpoint');
    for (let i = 0; i < 20; i++) expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
    await checkpointed;
    const pagesBefore = pages;
    const text = await scrape(t);
    const counted = sample(text, 'combo_sqlite_wal_checkpointed_pages_total')! - start;
    expect(pages).toBeGreaterThan(events); // some checkpoint copied more than one page
    expect(counted).toBeGreaterThanOrEqual(pagesBefore);
    expect(counted).toBeLessThanOrEqual(pages);
  });

  it('a count that fails on the worker is database_up 0, not all-zero orders', async () => {
    const t = await service({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '0' } });
    const game = await createGame(t);
    expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
    const db = t.service.database.db;
    const ok = await scrape(t);
    expect([sample(ok, 'combo_database_up'), sample(ok, 'combo_orders', { status: 'created' })]).toEqual([1, 1]);
    await sql`alter table orders rename to orders_away`.execute(db);
    cleanups.push(async () => {
      await sql`alter table orders_away rename to orders`.execute(db).catch(() => {});
    });
    const failed = await scrape(t);
    expect(sample(failed, 'combo_database_up')).toBe(0);
    // The gauges keep their last value.
    expect(sample(failed, 'combo_orders', { status: 'created' })).toBe(1);
    await sql`alter table orders_away rename to orders`.execute(db);
    const back = await scrape(t);
    expect([sample(back, 'combo_database_up'), sample(back, 'combo_orders', { status: 'created' })]).toEqual([1, 1]);
  });

  it('counts over a connection of its own to the file, and replaces a worker that died', async () => {
    const t = await service({ env: { SQLITE_CHECKPOINT_INTERVAL_MS: '0' } });
    const game = await createGame(t);
    expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
    const file = t.service.database.sqliteFile!;
    // The service's own connection keeps its open file; the worker (started on the first scrape)
    // opens the path, finds nothing there, and dies.
    renameSync(file, `${file}.away`);
    cleanups.push(() => {
      try {
        renameSync(`${file}.away`, file);
      } catch {
        /* already back */
      }
    });
    expect(sample(await scrape(t), 'combo_database_up')).toBe(0);
    renameSync(`${file}.away`, file);
    // A new worker is started for the next count.
    const back = await scrape(t);
    expect([sample(back, 'combo_database_up'), sample(back, 'combo_orders', { status: 'created' })]).toEqual([1, 1]);
  });
});

describe('latency units in metrics and request logs', () => {
  it('a request held ~200 ms by the GM: latencyMs in ms, combo_http_request_duration_seconds in seconds', async () => {
    const { lines, stream } = logSink();
    const gmKeys = new Map<string, string[]>();
    const gm = await new FakeGm(() => gmKeys, () => Date.now()).start();
    cleanups.push(() => gm.stop());
    const t = await service({ env: { LOG_LEVEL: 'info' }, logDestination: stream });
    const game = await createGame(t, { gm_url: gm.url });
    gmKeys.set(game.gameId, [game.secret]);
    const partner = await createPartner(t, [game.gameId]);
    gm.roles.set('combo-1', [role('r1')]);
    const b = await signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'pu', combo_id: 'combo-1', role_id: 'r1' });
    expect(b.status).toBe(200);
    gm.mode = { kind: 'hold' };
    const calls = gm.callsFor(game.gameId);
    const query = partnerGet(t, partner, queryUri(game.gameId, 'pu'));
    await until('the GM is asked', () => (gm.callsFor(game.gameId) > calls ? true : null));
    await new Promise((r) => setTimeout(r, 250));
    gm.release();
    const r = await query;
    expect(r.status).toBe(200);
    const traceId = r.headers.get('x-trace-id');
    const line = await until('the request line', () => lines.find((l) => l.msg === 'request' && l.traceId === traceId) ?? null);
    expect(line.route).toBe('/v1/query-binding');
    expect(line.latencyMs).toBeGreaterThanOrEqual(150);
    expect(line.latencyMs).toBeLessThan(5000);
    const text = await scrape(t);
    const labels = { method: 'GET', route: '/v1/query-binding', status: '200' };
    expect(sample(text, 'combo_http_request_duration_seconds_count', labels)).toBe(1);
    expect(sample(text, 'combo_http_request_duration_seconds_bucket', { ...labels, le: '0.1' })).toBe(0);
    expect(sample(text, 'combo_http_request_duration_seconds_bucket', { ...labels, le: '5' })).toBe(1);
    const sum = sample(text, 'combo_http_request_duration_seconds_sum', labels)!;
    expect(sum).toBeGreaterThanOrEqual(0.15);
    expect(sum).toBeLessThan(5);
  });
});

describe('5xx log lines', () => {
  it('a 500 adds an error line with the trace id of the answer', async () => {
    const { lines, stream } = logSink();
    const t = await service({ env: { LOG_LEVEL: 'info' }, logDestination: stream });
    const game = await createGame(t, { gm_url: null });
    const partner = await createPartner(t, [game.gameId]);
    await signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'u', combo_id: 'c', role_id: 'r1' });
    const r = await partnerGet(t, partner, queryUri(game.gameId, 'u'));
    expect([r.status, r.body.error]).toEqual([500, 'internal_error']);
    const traceId = r.headers.get('x-trace-id');
    expect(traceId).toBeTruthy();
    await until('the request line', () => lines.find((l) => l.msg === 'request' && l.traceId === traceId) ?? null);
    const errors = lines.filter((l) => l.level === 50 && l.traceId === traceId);
    expect(errors).toHaveLength(1);
    expect(errors[0].msg).toBe('request failed');
  });

  it('a flood of 503s logs at most one warn line a second, alsoSinceLastLine counting the others', async () => {
    const { lines, stream } = logSink();
    const clock = new ManualClock(Date.UTC(2026, 10, 27, 8, 0, 0));
    const t = await service({ clock, env: { LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: '600000' }, logDestination: stream });
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
    // Leaving: /readyz answers 503 while requests are still served.
    void t.service.stop();
    const ready = () => fetch(`${t.url}/readyz`).then((r) => r.status);
    const warned = () => lines.filter((l) => l.msg === 'service unavailable');
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push(await ready());
    clock.advance(999);
    statuses.push(await ready()); // still within the second of the first line
    clock.advance(1);
    statuses.push(await ready()); // a second after it: a line, counting the six before
    expect(statuses).toEqual(Array(8).fill(503));
    await until('the second warning', () => (warned().length >= 2 ? true : null));
    expect(warned().map((l) => [l.level, l.reason, l.alsoSinceLastLine])).toEqual([
      [40, 'the service is shutting down', 0],
      [40, 'the service is shutting down', 6],
    ]);
  });
});
