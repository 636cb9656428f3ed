/**
 * The shipped admission proxy, deploy/haproxy.cfg, in front of a real service: HAProxy itself,
 * started from that file with its COMBO_* settings, so that a change to the file that breaks
 * the limit or the answers' shape fails here. Overload at 5x through it is measured by
 * `BENCH_OVERLOAD_PROXY=haproxy BENCH_ONLY=overload5x npm run bench` (docs/benchmarks.md; `haproxy-tls`
 * for HAProxy terminating TLS as the edge).
 *
 * A request is held in progress by a query-binding whose GM call the fake GM holds, so the one
 * slot (COMBO_MAXCONN=1) stays taken for as long as a test needs.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createGame, orderBody, signed, startService, type Answer, type TestGame, type TestService } from './helpers/service.js';
import { selfSignedCertificate } from './helpers/certificates.js';
import { createPartner, FakeGm, partnerGet, queryUri, role, until, type TestPartner } from './helpers/partners.js';
import { authorizationHeader } from '../src/signing/signer.js';

const HAPROXY = process.env.HAPROXY_PATH ?? 'haproxy';
const haveHaproxy = spawnSync(HAPROXY, ['-v']).status === 0;
if (!haveHaproxy && process.env.CI) throw new Error(`HAProxy is required in CI for the admission proxy tests (no ${HAPROXY} on the PATH)`);
if (!haveHaproxy) console.warn(`*** admission proxy tests SKIPPED: no ${HAPROXY} on the PATH (apt-get install haproxy) ***`);

interface Proxy {
  /** The service as seen through the proxy: the test helpers take it in place of the service. */
  via: TestService;
  /** Requests waiting in HAProxy's queue now (its stats socket). */
  queued(): Promise<number>;
  /** HAProxy's `show stat` (CSV). */
  stat(): Promise<string>;
  stop(): Promise<void>;
}

const gmKeys = new Map<string, string[]>();
let gm: FakeGm;
let t: TestService;
let dir: string;

beforeAll(async () => {
  if (!haveHaproxy) return;
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-haproxy-'));
  gm = await new FakeGm(() => gmKeys, () => Date.now()).start();
  t = await startService({ env: { GM_TIMEOUT_MS: '30000' } });
});
afterAll(async () => {
  await t?.stop();
  await gm?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  gm?.release();
  if (gm) gm.mode = { kind: 'roles' };
});

let proxies = 0;
/** HAProxy from deploy/haproxy.cfg with these COMBO_* settings, plus a stats socket for the test. */
async function startProxy(settings: Record<string, string>, waitReady = true): Promise<Proxy> {
  const port = await freePort();
  const socket = path.join(dir, `stats-${++proxies}.sock`);
  const extra = path.join(dir, `stats-${proxies}.cfg`);
  writeFileSync(extra, `global\n\tstats socket ${socket} mode 600 level user\n`);
  const env = { ...process.env, COMBO_LISTEN: `127.0.0.1:${port}`, COMBO_SERVER_1: new URL(t.url).host, ...settings };
  const ca = settings.COMBO_TLS_CERT ? readFileSync(settings.COMBO_TLS_CERT) : undefined;
  const child: ChildProcess = spawn(HAPROXY, ['-f', 'deploy/haproxy.cfg', '-f', extra], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const via: TestService = { ...t, url: `${ca ? 'https' : 'http'}://127.0.0.1:${port}` };
  const readyz = () => (ca ? overTls('http/1.1', via.url, ca, 'GET', '/readyz', {}, '') : fetch(`${via.url}/readyz`));
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`haproxy exited with ${child.exitCode}: ${stderr}`);
    return readyz().then((r) => !waitReady || r.status === 200, () => false);
  }, 'haproxy to answer /readyz');
  return {
    via,
    queued: async () => {
      const csv = await statsCommand(socket, 'show stat\n');
      // The backend's summary row: "combo,BACKEND,<qcur>,..."
      const row = csv.split('\n').find((l) => l.startsWith('combo,BACKEND,'));
      return Number(row?.split(',')[2]);
    },
    stat: () => statsCommand(socket, 'show stat\n'),
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs `body` against a proxy started with these settings, and stops the proxy after. */
async function withProxy(settings: Record<string, string>, body: (p: Proxy) => Promise<void>, waitReady = true): Promise<void> {
  const p = await startProxy(settings, waitReady);
  try {
    await body(p);
  } finally {
    await p.stop();
  }
}

function statsCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(socket);
    let out = '';
    s.on('data', (c: Buffer) => (out += c.toString()));
    s.on('end', () => resolve(out));
    s.on('error', reject);
    s.end(command);
  });
}

interface TlsAnswer {
  /** The protocol ALPN chose. */
  alpn: string | false | null;
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** One request over TLS, verified against `ca`, offering only `protocol` by ALPN. */
function overTls(protocol: 'h2' | 'http/1.1', url: string, ca: Buffer, method: string, uri: string, headers: Record<string, string>, body: string): Promise<TlsAnswer> {
  const read = (stream: NodeJS.ReadableStream, done: (text: string) => void) => {
    let text = '';
    stream.setEncoding('utf8');
    stream.on('data', (c: string) => (text += c));
    stream.on('end', () => done(text));
  };
  const parse = (text: string) => (text ? JSON.parse(text) : null);
  return new Promise((resolve, reject) => {
    if (protocol === 'http/1.1') {
      // ALPN offered explicitly (https offers none by default), so that the test sees HAProxy choose it.
      const options: https.RequestOptions & { ALPNProtocols: string[] } = { method, headers, ca, ALPNProtocols: ['http/1.1'], agent: false };
      const req = https.request(url + uri, options, (res) => {
        const alpn = (res.socket as TLSSocket).alpnProtocol;
        read(res, (text) => resolve({ alpn, status: res.statusCode!, headers: res.headers as Record<string, string>, body: parse(text) }));
      });
      req.on('error', reject);
      req.end(body);
      return;
    }
    const session = http2.connect(url, { ca });
    session.on('error', reject);
    // endStream: false, so that a GET too is ended by req.end below, as HTTP/1.1's is.
    const req = session.request({ ':method': method, ':path': uri, ...headers }, { endStream: false });
    req.on('response', (h) => {
      read(req, (text) => {
        resolve({ alpn: session.alpnProtocol ?? null, status: Number(h[':status']), headers: h as Record<string, string>, body: parse(text) });
        session.close();
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function ordersWithReference(game: TestGame, referenceId: string): Promise<number> {
  const rows = await t.service.database.db.selectFrom('orders').select('order_id').where('game_id', '=', game.gameId).where('reference_id', '=', referenceId).execute();
  return rows.length;
}

let comboSeq = 0;
/** A game, a partner and a bound user whose GM call the fake GM will hold. */
async function boundUser(): Promise<{ game: TestGame; partner: TestPartner; uri: string }> {
  const game = await createGame(t, { gm_url: gm.url });
  gmKeys.set(game.gameId, [game.secret]);
  const partner = await createPartner(t, [game.gameId]);
  const combo = `combo-${++comboSeq}-${game.gameId}`;
  gm.roles.set(combo, [role('r1')]);
  const b = await signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'pu-1', combo_id: combo, role_id: 'r1' });
  expect(b.status).toBe(200);
  return { game, partner, uri: queryUri(game.gameId, 'pu-1') };
}

/**
 * Takes the proxy's one slot: a query-binding held at the GM until `gm.release()`. Its answer
 * comes wrapped (an async function's returned promise would be awaited with it).
 */
async function holdTheSlot(p: Proxy): Promise<{ answer: Promise<Answer> }> {
  const { game, partner, uri } = await boundUser();
  gm.mode = { kind: 'hold' };
  const before = gm.callsFor(game.gameId);
  const answer = partnerGet(p.via, partner, uri);
  await until(() => gm.callsFor(game.gameId) === before + 1, 'the GM call to be held');
  return { answer };
}

function expectRefusal(a: { status: number; body: unknown; headers: { get(n: string): string | null } | Record<string, string> }): void {
  const header = (n: string) => ('get' in a.headers && typeof a.headers.get === 'function' ? a.headers.get(n) : (a.headers as Record<string, string>)[n]);
  expect(a.status).toBe(503);
  expect(a.body).toEqual({ error: 'service_unavailable', message: expect.any(String) });
  expect(header('content-type')).toBe('application/json; charset=utf-8');
  expect(header('retry-after')).toBe('1');
  expect(header('x-trace-id')).toMatch(/^[0-9a-f-]{36}$/);
}

describe.skipIf(!haveHaproxy)('the admission proxy (deploy/haproxy.cfg)', () => {
  it('passes signed requests through unchanged: create-order and a query-binding answer as from the service', async () => {
    await withProxy({}, async (p) => {
      const game = await createGame(t);
      const body = orderBody();
      const order = await signed(p.via, game, 'POST', '/v1/server/create-order', body);
      expect(order.status).toBe(200);
      expect(order.headers.get('x-trace-id')).toBeTruthy();
      // Idempotent through the proxy as without it: the same order again.
      expect((await signed(t, game, 'POST', '/v1/server/create-order', body)).body).toEqual(order.body);
      const { partner, uri } = await boundUser();
      const q = await partnerGet(p.via, partner, uri);
      expect(q.status).toBe(200);
      expect(q.body.role.role_id).toBe('r1');
    });
  });

  it('with the instance full and the queue full, refuses a new request at once with the ErrorResponse; what waited is served once a slot frees', async () => {
    await withProxy({ COMBO_MAXCONN: '1', COMBO_MAX_QUEUE: '1', COMBO_QUEUE_TIMEOUT: '30s' }, async (p) => {
      const held = await holdTheSlot(p);
      const game = await createGame(t);
      const waiting = signed(p.via, game, 'POST', '/v1/server/create-order', orderBody());
      await until(async () => (await p.queued()) === 1, 'the second request to wait in the queue');
      const refusedBody = orderBody();
      const refused = await signed(p.via, game, 'POST', '/v1/server/create-order', refusedBody);
      expectRefusal(refused);
      // Refused before the service saw it: nothing stored.
      expect(await ordersWithReference(game, String(refusedBody.reference_id))).toBe(0);
      gm.release();
      expect((await held.answer).status).toBe(200);
      expect((await waiting).status).toBe(200);
      expect((await signed(p.via, game, 'POST', '/v1/server/create-order', refusedBody)).status).toBe(200);
      expect(await ordersWithReference(game, String(refusedBody.reference_id))).toBe(1);
    });
  });

  it('answers a request that waited COMBO_QUEUE_TIMEOUT for a slot with the ErrorResponse 503', async () => {
    await withProxy({ COMBO_MAXCONN: '1', COMBO_MAX_QUEUE: '64', COMBO_QUEUE_TIMEOUT: '100ms' }, async (p) => {
      const held = await holdTheSlot(p);
      const game = await createGame(t);
      const timedOut = await signed(p.via, game, 'POST', '/v1/server/create-order', orderBody());
      expectRefusal(timedOut);
      gm.release();
      expect((await held.answer).status).toBe(200);
    });
  });

  it('with COMBO_TLS_CERT, is the TLS edge itself: h2 and HTTP/1.1 by ALPN reach the service, /metrics does not, and its refusals are the ErrorResponse over TLS', async () => {
    const { pem } = selfSignedCertificate(dir, 'edge');
    const ca = readFileSync(pem);
    await withProxy({ COMBO_TLS_CERT: pem }, async (p) => {
      const game = await createGame(t);
      const body = JSON.stringify(orderBody());
      const call = (protocol: 'h2' | 'http/1.1') => {
        const authorization = authorizationHeader({ kind: 'game', id: game.gameId }, game.secret, 'POST', '/v1/server/create-order', body);
        return overTls(protocol, p.via.url, ca, 'POST', '/v1/server/create-order', { authorization, 'content-type': 'application/json' }, body);
      };
      const first = await call('h2');
      expect(first).toMatchObject({ alpn: 'h2', status: 200 });
      expect(first.headers['x-trace-id']).toBeTruthy();
      // The same request again over HTTP/1.1: the same order (idempotent), so it reached the service.
      const again = await call('http/1.1');
      expect(again).toMatchObject({ alpn: 'http/1.1', status: 200, body: first.body });
      // At the edge, /metrics stays off the internet, as the Caddyfile keeps it.
      const metrics = await overTls('h2', p.via.url, ca, 'GET', '/metrics', {}, '');
      expect(metrics).toMatchObject({ status: 404, body: { error: 'not_found', message: expect.any(String) } });
      // Spelled otherwise, it is the edge that answers (its message names /metrics).
      for (const spelled of ['/%6detrics', '/%6Detrics', '/metrics?x=1']) {
        const r = await overTls('h2', p.via.url, ca, 'GET', spelled, {}, '');
        expect(r, spelled).toMatchObject({ status: 404, body: { error: 'not_found', message: 'no endpoint at /metrics' } });
      }
    });
    const nobody = `127.0.0.1:${await freePort()}`;
    await withProxy({ COMBO_TLS_CERT: pem, COMBO_SERVER_1: nobody }, async (p) => {
      const refused = await overTls('h2', p.via.url, ca, 'GET', '/readyz', {}, '');
      expect(refused.alpn).toBe('h2');
      expectRefusal(refused);
    }, false);
  });

  it('sends a request an instance refuses (stopped, restarting) to another instance', async () => {
    // instance-1 is up at HAProxy's first check, then stops: with checks an hour apart HAProxy
    // still takes it for up, and every request that goes there must go on to instance-2.
    const other = await startService({ db: t.db });
    await withProxy({ COMBO_SERVER_1: new URL(other.url).host, COMBO_SERVER_2: new URL(t.url).host, COMBO_CHECK_INTER: '1h' }, async (p) => {
      await other.stop();
      const game = await createGame(t);
      const answers = [];
      for (let i = 0; i < 6; i++) answers.push(await signed(p.via, game, 'POST', '/v1/server/create-order', orderBody()));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(await p.stat()).toMatch(/^combo,instance-1,.*,UP,/m);
    });
  });

  it('answers 503 with the ErrorResponse when no instance is up', async () => {
    const nobody = `127.0.0.1:${await freePort()}`;
    await withProxy({ COMBO_SERVER_1: nobody }, async (p) => {
      const game = await createGame(t);
      expectRefusal(await signed(p.via, game, 'POST', '/v1/server/create-order', orderBody()));
    }, false);
  });
});
