import net from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enqueueNotification } from '../src/notifications/outbox.js';
import { Receiver, ok, status, until } from './helpers/receiver.js';
import { IdGenerator } from '../src/lib/ids.js';
import { TEST_DB } from './helpers/db.js';
import { createPartner, partnerGet, queryUri } from './helpers/partners.js';
import { ADMIN_TOKEN, admin, createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';
import { METRICS_TOKEN, sample, total } from './helpers/metrics.js';

const scrape = async (t: TestService, token = METRICS_TOKEN) => {
  const r = await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  return { status: r.status, type: r.headers.get('content-type'), text: await r.text() };
};

describe('GET /metrics', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService({ env: { METRICS_TOKEN, NOTIFY_RETRY_BASE_MS: '50' } });
  });
  afterAll(async () => t?.stop());

  it('requires the METRICS_TOKEN bearer token when one is configured', async () => {
    const none = await fetch(`${t.url}/metrics`);
    expect(none.status).toBe(401);
    expect(await none.json()).toMatchObject({ error: 'unauthorized' });
    expect((await scrape(t, 'metrics-token-wrong-0123456789')).status).toBe(401);
    expect((await scrape(t, ADMIN_TOKEN)).status).toBe(401);
    const ok = await scrape(t);
    expect(ok.status).toBe(200);
    expect(ok.type).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(ok.text).toContain('# TYPE combo_http_request_duration_seconds histogram');
    expect(ok.text).toContain('process_cpu_user_seconds_total');
  });

  it('answers /metrics only as spelled: a percent-encoded spelling is 404, so a proxy keeping the raw path off the internet holds', async () => {
    for (const spelled of ['/%6detrics', '/%6Detrics', '/%6d%65trics']) {
      const r = await fetch(`${t.url}${spelled}`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      expect(r.status, spelled).toBe(404);
      expect(await r.json()).toMatchObject({ error: 'not_found' });
    }
  });

  it('serves /metrics to an HTTP/1.1 request in absolute form (GET http://host/metrics)', async () => {
    const { hostname, port } = new URL(t.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () =>
        socket.write(`GET http://${hostname}:${port}/metrics HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${METRICS_TOKEN}\r\nConnection: close\r\n\r\n`),
      );
      let out = '';
      socket.setEncoding('utf8');
      socket.on('data', (c: string) => (out += c));
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('counts requests by route pattern (never the raw path) and status, with latency histograms', async () => {
    const game = await createGame(t);
    for (let i = 0; i < 3; i++) expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
    expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ product_id: 'nope' }))).status).toBe(400);
    expect((await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).status).toBe(200);
    expect((await fetch(`${t.url}/no/such/secret-path-abc`)).status).toBe(404);
    const { text } = await scrape(t);
    const route = '/v1/server/create-order';
    expect(sample(text, 'combo_http_requests_total', { method: 'POST', route, status: '200' })).toBe(3);
    expect(sample(text, 'combo_http_requests_total', { method: 'POST', route, status: '400' })).toBe(1);
    expect(sample(text, 'combo_http_request_duration_seconds_count', { method: 'POST', route, status: '200' })).toBe(3);
    expect(sample(text, 'combo_http_request_duration_seconds_bucket', { method: 'POST', route, status: '200', le: '+Inf' })).toBe(3);
    expect(sample(text, 'combo_http_requests_total', { method: 'GET', route: '/admin/v1/games/:game_id', status: '200' })).toBe(1);
    expect(sample(text, 'combo_http_requests_total', { method: 'GET', route: '(unmatched)', status: '404' })).toBe(1);
    // Route patterns only: the game id is in the per-game counters, never in a route label.
    expect(text).not.toContain(`/admin/v1/games/${game.gameId}`);
    expect(text).not.toContain('secret-path-abc');
  });

  it('reads orders by status, notification and national-upload backlogs from the database', async () => {
    const game = await createGame(t);
    const before = await scrape(t);
    const created0 = sample(before.text, 'combo_orders', { status: 'created' }) ?? 0;
    const order = await signed(t, game, 'POST', '/v1/server/create-order', orderBody());
    const db = t.service.database.db;
    const row = await db.selectFrom('orders').selectAll().where('order_id', '=', order.body.order_id).executeTakeFirstOrThrow();
    // Due in an hour: pending for the gauge, never attempted while this file runs (an attempt
    // would add to the counters the next test checks exactly).
    await db.transaction().execute((trx) => enqueueNotification(trx, new IdGenerator(1), row, 'ship_order', Date.now() + 3_600_000));
    await admin(t, 'PATCH', `/admin/v1/games/${game.gameId}`, {
      nppa: { app_id: 'a'.repeat(32), biz_id: '1101999999', secret_key: 'f'.repeat(32) },
    });
    expect((await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'p1', session_id: 's1' })).status).toBe(200);
    const pendingNppa = Number(
      (await db.selectFrom('nppa_events').select((eb) => eb.fn.countAll().as('n')).where('status', '=', 'pending').executeTakeFirstOrThrow()).n,
    );
    expect(pendingNppa).toBeGreaterThan(0);

    const { text } = await scrape(t);
    expect(sample(text, 'combo_orders', { status: 'created' })).toBe(created0 + 1);
    expect(sample(text, 'combo_orders', { status: 'refunded' })).toBe(0);
    expect(sample(text, 'combo_notifications_pending')).toBe(1);
    // Per game: the order and the session counted under its game_id, the undelivered notification too.
    expect(sample(text, 'combo_orders_created_total', { game_id: game.gameId })).toBe(1);
    expect(sample(text, 'combo_session_reports_total', { game_id: game.gameId, report: 'enter' })).toBe(1);
    expect(sample(text, 'combo_notifications_undelivered', { game_id: game.gameId, status: 'pending' })).toBe(1);
    expect(total(text, 'combo_notifications_undelivered', { status: 'pending' })).toBe(1);
    expect(sample(text, 'combo_nppa_events_pending')).toBe(pendingNppa);
    expect(sample(text, 'combo_database_up')).toBe(1);
    if (TEST_DB === 'postgres') {
      expect(sample(text, 'combo_db_pool_connections', { state: 'total' })).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'combo_db_pool_connections', { state: 'waiting' })).toBe(0);
    } else {
      expect(text).not.toContain('combo_db_pool_connections{');
    }
  });

  it('exposes the counters other domains report through service.metrics', async () => {
    t.service.metrics.notificationAttempt('g_counted', 'success', 12);
    t.service.metrics.notificationAttempt('g_counted', 'failure', 5000);
    t.service.metrics.notificationAttempt('g_counted', 'failure');
    t.service.metrics.nppaUpload('success', 7);
    const { text } = await scrape(t);
    expect(sample(text, 'combo_notification_attempts_total', { game_id: 'g_counted', result: 'success' })).toBe(1);
    expect(sample(text, 'combo_notification_attempts_total', { game_id: 'g_counted', result: 'failure' })).toBe(2);
    expect(sample(text, 'combo_notification_attempt_duration_seconds_count')).toBe(2);
    expect(sample(text, 'combo_nppa_uploads_total', { result: 'success' })).toBe(1);
    expect(sample(text, 'combo_nppa_uploaded_events_total', { result: 'success' })).toBe(7);
  });

  it('counts real notification deliveries by result (dispatcher -> metrics)', async () => {
    const game = await createGame(t);
    const receiver = await new Receiver({ keys: new Map([[game.gameId, [game.secret]]]), now: () => Date.now() }).start();
    try {
      receiver.sequence('/m', status(500), ok());
      const before = (await scrape(t)).text;
      const o = await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ notify_url: `${receiver.url}/m` }));
      const paid = await fetch(`${t.url}/v1/client/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ order_token: o.body.order_token, channel: 'sandbox' }),
      });
      expect(paid.status).toBe(200);
      await until('the notification is delivered twice (500, then 200)', () => (receiver.on('/m').length === 2 ? true : null), 30_000);
      await until('the success is counted', async () => {
        const text = (await scrape(t)).text;
        const mine = (result: string) => sample(text, 'combo_notification_attempts_total', { game_id: game.gameId, result }) ?? 0;
        // Counted under the game's own label, apart from other tests' games.
        return mine('success') === 1 && mine('failure') === 1 ? true : null;
      });
    } finally {
      await receiver.close();
    }
  });

  it('counts 429 answers by caller kind', async () => {
    const game = await createGame(t, { rate_limit_per_second: 1 });
    await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'p', session_id: 'a' });
    expect((await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'p', session_id: 'b' })).status).toBe(429);
    expect(sample((await scrape(t)).text, 'combo_rate_limited_total', { kind: 'game' })).toBeGreaterThanOrEqual(1);
  });
});

describe('request logs', () => {
  const lines: string[] = [];
  let t: TestService;
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    t = await startService({ env: { LOG_LEVEL: 'info', METRICS_TOKEN }, logDestination: sink });
  });
  afterAll(async () => t?.stop());

  it('a client that closes in the middle of its body is not logged as unreachable storage', async () => {
    const { hostname, port } = new URL(t.url);
    const socket = net.connect({ host: hostname, port: Number(port) });
    await new Promise<void>((r) => socket.once('connect', r));
    socket.write('POST /admin/v1/games HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-admin-token-0123456789\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"ga');
    const inProgress = async () => Number(/^combo_http_requests_in_progress (\d+)$/m.exec(await (await fetch(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text())?.[1]);
    await until('the body is being read', async () => ((await inProgress()) >= 1 ? true : null));
    socket.destroy();
    // Its place is given back once its (unread) answer is written or its connection closes; one
    // more round trip lets the abort's handling finish.
    await until('the cut request is done', async () => ((await inProgress()) === 0 ? true : null));
    await inProgress();
    expect(lines.filter((l) => l.includes('storage is unavailable'))).toEqual([]);
  });

  it('log one JSON line per request with method, route, status, latency and trace id', async () => {
    const r = await fetch(`${t.url}/healthz`);
    const traceId = r.headers.get('x-trace-id');
    const entry = lines.map((l) => JSON.parse(l)).find((l) => l.traceId === traceId);
    expect(entry).toMatchObject({ level: 30, msg: 'request', method: 'GET', route: '/healthz', status: 200, traceId });
    expect(typeof entry.latencyMs).toBe('number');
  });

  it('never contain Authorization headers, admin or metrics tokens, secret keys or order tokens', async () => {
    const givenSecret = 'sk_given0123456789abcdefghijklmnopqrstuvwxyzABCD';
    const created = await admin(t, 'POST', '/admin/v1/games', { game_id: `logs_${Date.now()}`, name: 'Logs', secret_key: givenSecret });
    expect(created.status).toBe(201);
    const game = { gameId: created.body.game_id as string, secret: givenSecret, keyId: created.body.key_id as string };
    const extraKey = await admin(t, 'POST', `/admin/v1/games/${game.gameId}/keys`, {});
    expect(extraKey.status).toBe(201);
    const nppaSecret = 'a1b2c3d4e5f60718293a4b5c6d7e8f90';
    await admin(t, 'PATCH', `/admin/v1/games/${game.gameId}`, { nppa: { app_id: 'b'.repeat(32), biz_id: '1101999999', secret_key: nppaSecret } });
    await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY' });
    const order = await signed(t, game, 'POST', '/v1/server/create-order', orderBody());
    expect(order.status).toBe(200);
    const orderToken = order.body.order_token as string;
    const partner = await createPartner(t, [game.gameId]);
    expect((await partnerGet(t, partner, queryUri(game.gameId, 'u1'))).status).toBe(404);
    const forged = await signed(t, { ...game, secret: 'sk_forged_secret_value_0123456789' }, 'POST', '/v1/server/create-order', orderBody());
    expect(forged.status).toBe(401);
    await fetch(`${t.url}/checkout/${encodeURIComponent(orderToken)}?order_token=${encodeURIComponent(orderToken)}`);
    await fetch(`${t.url}/v1/client/order`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order_token: orderToken }) });
    await fetch(`${t.url}/v1/server/create-order`, {
      method: 'POST',
      headers: { authorization: `Bearer ${givenSecret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ secret_key: givenSecret }),
    });
    await scrape(t);
    await fetch(`${t.url}/admin/v1/games`, { headers: { authorization: 'Bearer wrong-admin-token-xyz-123456' } });

    const log = lines.join('\n');
    expect(lines.filter((l) => JSON.parse(l).msg === 'request').length).toBeGreaterThanOrEqual(10);
    for (const secret of [ADMIN_TOKEN, METRICS_TOKEN, givenSecret, extraKey.body.secret_key, nppaSecret, partner.secret, orderToken, 'sk_forged_secret_value', 'wrong-admin-token-xyz', 'SEAYOO-HMAC-SHA256', 'Signature=']) {
      expect(log, `logs contain ${secret}`).not.toContain(secret);
    }
    expect(log.toLowerCase()).not.toContain('authorization');
  });
});
