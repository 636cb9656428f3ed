/**
 * Overload protection: past MAX_INFLIGHT_REQUESTS the service answers new requests 503
 * service_unavailable with Retry-After at once (before reading their bodies) instead of
 * queueing them; health checks are exempt; capacity comes back when requests finish.
 * Requests are held in flight by a GM server that does not answer (a query-binding waits on it).
 */
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeGm, createPartner, partnerGet, queryUri, role } from './helpers/partners.js';
import { createGame, signed, startService, wrongSignature, type TestGame, type TestService } from './helpers/service.js';
import { until } from './helpers/receiver.js';
import { head, rawRequest } from './helpers/raw.js';

let t: TestService;
let gm: FakeGm;
const keys = new Map<string, string[]>();

beforeAll(async () => {
  t = await startService({ env: { MAX_INFLIGHT_REQUESTS: '2', ROLE_CACHE_TTL_SECONDS: '0' } });
  gm = await new FakeGm(() => keys, () => Date.now()).start();
});
afterAll(async () => {
  await gm?.stop();
  await t?.stop();
});

describe('load shedding', () => {
  it('sheds requests beyond MAX_INFLIGHT_REQUESTS with 503 and Retry-After, and recovers', async () => {
    const game = await createGame(t, { gm_url: gm.url });
    keys.set(game.gameId, [game.secret]);
    const partner = await createPartner(t, [game.gameId]);
    gm.roles.set('c1', [role('r1')]);
    const b = await signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'u1', combo_id: 'c1', role_id: 'r1' });
    expect(b.status).toBe(200);

    gm.mode = { kind: 'hold' };
    const held = [partnerGet(t, partner, queryUri(game.gameId, 'u1')), partnerGet(t, partner, queryUri(game.gameId, 'u1'))];
    // Both queries are in the service, waiting on one shared GM call.
    await until('two queries wait on the GM', () => (t.service.roleCache.waiting() >= 2 ? true : null));

    const shed = await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'c1', session_id: 's-shed' });
    expect(shed.status).toBe(503);
    expect(shed.body).toEqual({ error: 'service_unavailable', message: expect.stringContaining('capacity') });
    expect(shed.headers.get('retry-after')).toBe('1');
    expect(shed.headers.get('x-trace-id')).toBeTruthy();
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    // Exempt also in absolute form (a scrape through a proxy).
    for (const p of ['/healthz', '/readyz', '/metrics']) expect((await rawRequest(t, head('GET', `http://x${p}`, [], 0))).status).toBe(200);
    // So are the console's static files (streamed: a client that reads nothing would hold the place).
    expect((await fetch(`${t.url}/console/assets/none.js`)).status).not.toBe(503);
    // refused before routing, so counted apart from the per-route request counters
    expect(await (await fetch(`${t.url}/metrics`)).text()).toMatch(/^combo_http_requests_shed_total 1$/m);
    // Nothing of the shed request was stored.
    const sessions = await t.service.database.db.selectFrom('sessions').selectAll().where('game_id', '=', game.gameId).execute();
    expect(sessions).toHaveLength(0);

    gm.mode = { kind: 'roles' };
    gm.release();
    expect((await Promise.all(held)).map((r) => r.status)).toEqual([200, 200]);
    const again = await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'c1', session_id: 's-after' });
    expect(again.status).toBe(200);
  });
});

describe('adaptive admission limit', () => {
  let s: TestService;
  beforeAll(async () => {
    // The coarser event-loop-delay switch off: this test's 600 ms of busy loop would trip it.
    s = await startService({ env: { MAX_INFLIGHT_REQUESTS: '256', ADMISSION_LATENCY_TARGET_MS: '50', MAX_EVENT_LOOP_DELAY_MS: '0' } });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const gauge = async (name: string) => {
    const text = await (await fetch(`${s.url}/metrics`)).text();
    const m = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  /**
   * Keeps the event loop saturated for `ms`, as under overload: busy turns of 60 ms (over half
   * the 50 ms target, so each window counts as too slow) with only a check-phase yield between
   * them, so that the adjustment timer runs and sees nearly no idle time. Wherever the 100 ms
   * windows fall, the whole windows inside this stretch are saturated and too slow.
   */
  const saturate = async (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end) {
      const turn = performance.now() + 60;
      while (performance.now() < turn);
      await new Promise((r) => setImmediate(r));
    }
  };

  it('lowers the in-progress limit while the event loop is saturated, then grows back to MAX_INFLIGHT_REQUESTS', async () => {
    expect(await gauge('combo_http_admission_limit')).toBe(256);
    expect(await gauge('combo_http_requests_in_progress')).toBe(0);
    // 500 ms saturated: at least three whole windows, each lowering the limit by a fifth; reading
    // the gauge takes calm windows, which raise it by a tenth each, so it cannot be back at 256
    // from 131 or less before it is read. Repeated in case a very slow read let it grow back.
    const lowered = await until('the limit drops', async () => {
      await saturate(500);
      const v = await gauge('combo_http_admission_limit');
      return v !== null && v < 256 ? v : null;
    });
    expect(lowered).toBeLessThan(256);
    // Fast, unsaturated windows: back to the ceiling (a tenth per 100 ms window).
    await until('the limit is back at 256', async () => ((await gauge('combo_http_admission_limit')) === 256 ? true : null));
    const game = await createGame(s);
    expect((await signed(s, game, 'POST', '/v1/server/enter-game', { combo_id: 'c1', session_id: 's-adaptive' })).status).toBe(200);
  });
});

// A client that sends its bodies slowly must not hold the in-progress places: BODY_TIMEOUT_MS
// after its headers, an admitted request whose body is incomplete is answered 408 and closed.
describe('bodies that do not arrive (BODY_TIMEOUT_MS)', () => {
  let s: TestService;
  beforeAll(async () => {
    // Long enough that the request shed while both places are held is sent before they come
    // back, also on a loaded machine (at 300 ms it once arrived after them and was answered 200).
    s = await startService({ env: { MAX_INFLIGHT_REQUESTS: '2', BODY_TIMEOUT_MS: '1500' } });
  });
  afterAll(async () => s?.stop());

  const inProgress = async () => Number(/^combo_http_requests_in_progress (\d+)$/m.exec(await (await fetch(`${s.url}/metrics`)).text())?.[1]);

  /**
   * Sends headers announcing 100 bytes (with an Authorization that only the body can prove
   * wrong) and 10 of them; resolves with everything the server sent until it closed.
   */
  function slowHttp1(game: TestGame): Promise<string> {
    const { port } = new URL(s.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1');
      let answer = '';
      socket.on('data', (c) => (answer += c.toString('latin1')));
      socket.on('close', () => resolve(answer));
      socket.on('error', reject);
      socket.write(`POST /v1/server/enter-game HTTP/1.1\r\nHost: x\r\nAuthorization: ${wrongSignature(game, 'POST', '/v1/server/enter-game')}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"combo_id"`);
    });
  }

  it('HTTP/1.1: 408 ErrorResponse and the connection closed; the places come back', async () => {
    const game = await createGame(s);
    const slow = [slowHttp1(game), slowHttp1(game)];
    await until('two slow bodies admitted', async () => ((await inProgress()) === 2 ? true : null));
    const shed = await signed(s, game, 'POST', '/v1/server/enter-game', { combo_id: 'c1', session_id: 's-1' });
    expect(shed.status).toBe(503);
    for (const answer of await Promise.all(slow)) {
      expect(answer).toMatch(/^HTTP\/1\.1 408 /);
      expect(answer).toMatch(/\r\nconnection: close\r\n/i);
      expect(answer).toMatch(/\r\nx-trace-id: /i);
      expect(answer.slice(answer.indexOf('\r\n\r\n') + 4)).toBe('{"error":"invalid_request","message":"the request body did not arrive in time"}');
    }
    const ok = await signed(s, game, 'POST', '/v1/server/enter-game', { combo_id: 'c1', session_id: 's-2' });
    expect(ok.status).toBe(200);
  });

  it('HTTP/2: 408 on each stream whose body stalls, and the places come back', async () => {
    const game = await createGame(s);
    const session = http2.connect(s.url);
    try {
      const stalled = [0, 1].map(
        () =>
          new Promise<{ status: number; body: string }>((resolve, reject) => {
            const req = session.request(
              { ':method': 'POST', ':path': '/v1/server/enter-game', 'content-type': 'application/json', authorization: wrongSignature(game, 'POST', '/v1/server/enter-game') },
              { endStream: false },
            );
            let status = 0;
            let body = '';
            req.on('response', (h) => (status = Number(h[':status'])));
            req.on('data', (c: Buffer) => (body += c.toString()));
            req.on('close', () => resolve({ status, body }));
            req.on('error', reject);
            req.write('{"combo_id"');
          }),
      );
      for (const r of await Promise.all(stalled)) expect(r).toEqual({ status: 408, body: '{"error":"invalid_request","message":"the request body did not arrive in time"}' });
      const ok = await signed(s, game, 'POST', '/v1/server/enter-game', { combo_id: 'c1', session_id: 's-3' });
      expect(ok.status).toBe(200);
    } finally {
      session.close();
    }
  });
});

// A request stops holding its place when its answer is ended, whatever becomes of the
// connection: answers that can never leave must not fill MAX_INFLIGHT_REQUESTS for good.
describe('answers that cannot leave do not hold in-progress places', () => {
  let s: TestService;
  beforeAll(async () => {
    // No body deadline: nothing but the answer itself may give a place back.
    s = await startService({ env: { MAX_INFLIGHT_REQUESTS: '4', BODY_TIMEOUT_MS: '0' } });
  });
  afterAll(async () => s?.stop());

  const inProgress = async () => Number(/^combo_http_requests_in_progress (\d+)$/m.exec(await (await fetch(`${s.url}/metrics`)).text())?.[1]);

  it('HTTP/1.1: a request pipelined behind a 417 (the connection closes, its answer never leaves)', async () => {
    const { port } = new URL(s.url);
    for (let i = 0; i < 6; i++) {
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1');
        let text = '';
        socket.on('data', (c) => (text += c.toString('latin1')));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
        socket.write('GET /v1/query-binding HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\nGET /v1/query-binding HTTP/1.1\r\nHost: x\r\n\r\n');
      });
      expect(answer).toMatch(/^HTTP\/1\.1 417 /);
    }
    await until('no request in progress', async () => ((await inProgress()) === 0 ? true : null));
    expect((await fetch(`${s.url}/admin/v1/games`, { headers: { authorization: 'Bearer test-admin-token-0123456789' } })).status).toBe(200);
  });

  it('HTTP/1.1: a request whose body cannot be parsed, answered 400 while its client keeps the connection open', async () => {
    const { port } = new URL(s.url);
    const open: net.Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        // Half-open, as a client that reads the answer and keeps its side open.
        const socket = net.connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true });
        open.push(socket);
        const answer = new Promise<string>((resolve) => socket.once('data', (c) => resolve(c.toString('latin1'))));
        socket.write('POST /admin/v1/games HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-admin-token-0123456789\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"gam\r\nZZ\r\nxx\r\n');
        expect(await answer).toMatch(/^HTTP\/1\.1 400 /);
      }
      await until('no request in progress', async () => ((await inProgress()) === 0 ? true : null));
      expect((await fetch(`${s.url}/admin/v1/games`, { headers: { authorization: 'Bearer test-admin-token-0123456789' } })).status).toBe(200);
    } finally {
      for (const socket of open) socket.destroy();
    }
  });

  it('HTTP/2: a client that opens no flow-control window (small answers, and large ones written in chunks)', async () => {
    const session = http2.connect(s.url, { settings: { initialWindowSize: 0 } });
    try {
      const answered = [];
      for (let i = 0; i < 6; i++) {
        const req = session.request({ ':method': 'GET', ':path': i % 2 ? '/openapi.json' : '/v1/query-binding' });
        answered.push(new Promise((resolve) => req.on('response', resolve)));
        req.end();
      }
      await Promise.all(answered);
      expect(await inProgress()).toBe(0);
      expect((await fetch(`${s.url}/admin/v1/games`, { headers: { authorization: 'Bearer test-admin-token-0123456789' } })).status).toBe(200);
    } finally {
      session.destroy();
    }
  });
});

describe('event-loop delay (MAX_EVENT_LOOP_DELAY_MS)', () => {
  /** Holds this process's event loop, which the service shares, for `ms`. */
  const hold = (ms: number) => {
    const end = performance.now() + ms;
    while (performance.now() < end);
  };
  /** A POST without a body: 415 when admitted, 503 when shed. */
  const call = (s: TestService) => fetch(`${s.url}/v1/server/enter-game`, { method: 'POST' });

  it('a loop held while the service starts is not load: its first requests are admitted', async () => {
    // A limit that a busy test machine does not reach by itself, and a start held past it.
    const s = await startService({ env: { MAX_EVENT_LOOP_DELAY_MS: '1000' }, beforeListen: () => hold(1500) });
    try {
      // Until past the first one-second reading.
      const end = performance.now() + 1500;
      while (performance.now() < end) expect((await call(s)).status).toBe(415);
    } finally {
      await s.stop();
    }
  });

  it('a loop held past the limit while serving: new requests get 503 (health checks still answer), then are admitted once a calm second is read', async () => {
    const s = await startService({ env: { MAX_EVENT_LOOP_DELAY_MS: '500' } });
    try {
      // Held at several points of the service's one-second reading, each inside a timer
      // callback: the service's own timers that fell due meanwhile run right after it, so a
      // hold can still be in progress when the second is read. Every hold is seen.
      for (const offsetMs of [0, 250, 500, 750]) {
        // Admitted at first (on a busy test machine the loop may lag past the limit by itself).
        await until('a call admitted', async () => (await call(s)).status === 415);
        await new Promise<void>((resolve) =>
          setTimeout(() => {
            hold(1200);
            resolve();
          }, offsetMs),
        );
        // The hold is read at the end of the second it ended in.
        const shed = await until(`a call shed after a hold at ${offsetMs} ms`, async () => {
          const r = await call(s);
          return r.status === 503 ? r : null;
        });
        expect(await shed.json()).toEqual({ error: 'service_unavailable', message: expect.stringContaining('capacity') });
        expect(shed.headers.get('retry-after')).toBe('1');
        expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
        await until('calls admitted again', async () => (await call(s)).status === 415);
      }
    } finally {
      await s.stop();
    }
  });
});
