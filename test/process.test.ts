import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { migrateToLatest, openDatabase } from '../src/db/index.js';
import { authorizationHeader } from '../src/signing/signer.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { NO_EVENT_LOOP_SHEDDING, ensureServiceBuilt, spawnCommand, spawnEntry, spawnService, type Spawned } from './helpers/spawn.js';
import { orderBody } from './helpers/service.js';
import { sample } from './helpers/metrics.js';
import { HangingRelay } from './helpers/hanging-relay.js';
import { selfSignedCertificate } from './helpers/certificates.js';

/** The real entry points (src/main.ts, src/cli.ts) as child processes. */
const ADMIN = 'process-test-admin-token-0123';
let db: TestDatabase;
let dataDir: string;
const running: Spawned[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'combo-proc-'));
});
afterEach(async () => {
  for (const s of running.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    await s.exited;
  }
});
afterAll(async () => {
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
});

const env = (over: Record<string, string | undefined> = {}) => ({
  DATABASE_URL: db.url,
  DATA_DIR: dataDir,
  ADMIN_TOKEN: ADMIN,
  SHUTDOWN_TIMEOUT_MS: '60000',
  ...NO_EVENT_LOOP_SHEDDING,
  ...over,
});

async function start(over: Record<string, string | undefined> = {}) {
  const s = await spawnService(env(over));
  running.push(s);
  return s;
}

async function adminCall(url: string, method: string, p: string, body?: unknown, token = ADMIN) {
  const res = await fetch(url + p, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

let seq = 0;
async function newGame(url: string) {
  const gameId = `proc_${process.pid}_${++seq}_${Date.now().toString(36)}`;
  const g = await adminCall(url, 'POST', '/admin/v1/games', { game_id: gameId, name: 'P', sandbox_payments: true });
  expect(g.status).toBe(201);
  expect((await adminCall(url, 'PUT', `/admin/v1/games/${gameId}/products/gem_60`, { name: 'g', price: 600, currency: 'CNY' })).status).toBe(200);
  return { gameId, secret: g.body.secret_key as string };
}

function signedInit(game: { gameId: string; secret: string }, uri: string, body: string) {
  return { 'content-type': 'application/json', authorization: authorizationHeader({ kind: 'game', id: game.gameId }, game.secret, 'POST', uri, body) };
}

describe('graceful shutdown', () => {
  it('SIGTERM while a request is in flight: the request completes with 200, new ones are refused, exit 0', async () => {
    const s = await start();
    const game = await newGame(s.url);
    const uri = '/v1/server/create-order';
    const body = JSON.stringify(orderBody());
    const { hostname, port } = new URL(s.url);

    // Expect: 100-continue makes the request observable as "in flight": the server has read
    // its head and started handling it when the 100 arrives; the body is sent only later.
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: hostname,
          port: Number(port),
          method: 'POST',
          path: uri,
          agent: false,
          headers: { ...signedInit(game, uri, body), 'content-length': Buffer.byteLength(body), expect: '100-continue' },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.on('continue', async () => {
        s.child.kill('SIGTERM');
        try {
          await s.logLine('draining');
          // While draining, a new request is refused (503 or connection refused), never served.
          const late = await fetch(`${s.url}/healthz`).then(
            (r) => r.status,
            () => 'refused',
          );
          expect([503, 'refused']).toContain(late);
        } catch (e) {
          reject(e);
        }
        req.end(body);
      });
    });
    const r = await answer;
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(JSON.parse(r.text)).sort()).toEqual(['expires_at', 'order_id', 'order_token']);
    expect(await s.exited).toBe(0);
    await s.logLine('stopped');

    // The order was committed before the answer.
    const database = openDatabase(db.url);
    try {
      const row = await database.db.selectFrom('orders').select('order_id').where('order_id', '=', JSON.parse(r.text).order_id).executeTakeFirst();
      expect(row).toBeDefined();
    } finally {
      await database.close();
    }
  });

  it('SIGTERM while a keep-alive connection has a request in flight: answered, the connection closed after, exit without the grace period', async () => {
    // SHUTDOWN_TIMEOUT_MS is 60 s here: a keep-alive connection left open after its answer
    // would hold the exit until then (past this test's time-out).
    const s = await start();
    const game = await newGame(s.url);
    const uri = '/v1/server/create-order';
    const body = JSON.stringify(orderBody());
    const { hostname, port } = new URL(s.url);
    const agent = new http.Agent({ keepAlive: true });
    let closedByServer = false;
    const answer = new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const req = http.request(
        { host: hostname, port: Number(port), method: 'POST', path: uri, agent, headers: { ...signedInit(game, uri, body), 'content-length': Buffer.byteLength(body), expect: '100-continue' } },
        (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
        },
      );
      req.on('socket', (socket) => socket.once('close', () => (closedByServer = true)));
      req.on('error', reject);
      req.on('continue', async () => {
        s.child.kill('SIGTERM');
        await s.logLine('draining').catch(reject);
        req.end(body);
      });
    });
    const r = await answer;
    expect(r.status).toBe(200);
    const started = Date.now();
    expect(await s.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(closedByServer).toBe(true);
    agent.destroy();
  });

  it('SIGTERM while an HTTP/2 stream is in flight: the stream completes with 200, exit 0', async () => {
    const s = await start();
    const game = await newGame(s.url);
    const uri = '/v1/server/create-order';
    const body = JSON.stringify(orderBody());
    const session = http2.connect(s.url);
    try {
      const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = session.request({ ':method': 'POST', ':path': uri, ...signedInit(game, uri, body), expect: '100-continue' });
        let status = 0;
        let text = '';
        req.setEncoding('utf8');
        req.on('response', (h) => (status = Number(h[':status'])));
        req.on('data', (c: string) => (text += c));
        req.on('end', () => resolve({ status, text }));
        req.on('error', reject);
        req.on('continue', async () => {
          s.child.kill('SIGTERM');
          await s.logLine('draining').catch(reject);
          req.end(body);
        });
      });
      const r = await answer;
      expect(r.status, r.text).toBe(200);
      expect(JSON.parse(r.text).order_id).toBeTruthy();
    } finally {
      session.close();
    }
    expect(await s.exited).toBe(0);
  });

  it('a request that never finishes cannot hold the shutdown past SHUTDOWN_TIMEOUT_MS', async () => {
    const s = await start({ SHUTDOWN_TIMEOUT_MS: '300' });
    const { hostname, port } = new URL(s.url);
    const cut = new Promise<string>((resolve) => {
      // An operator route: its bearer token is checked, and then its body waited for (a signed
      // route without a valid-looking Authorization is answered before its body).
      const req = http.request({ host: hostname, port: Number(port), method: 'POST', path: '/admin/v1/games', agent: false, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json', 'content-length': 100, expect: '100-continue' } });
      req.on('continue', () => s.child.kill('SIGINT')); // SIGINT drains like SIGTERM
      req.on('response', (res) => resolve(`answered ${res.statusCode}`));
      req.on('error', (e) => resolve((e as NodeJS.ErrnoException).code ?? 'error'));
    });
    expect(await s.exited).toBe(0);
    expect(await cut).toMatch(/ECONNRESET|socket hang up|answered 5\d\d/);
  });

  it.runIf(TEST_DB === 'postgres')('a database that stopped answering cannot hold the exit: status 1 after one more grace period, saying why', async () => {
    const relay = await new HangingRelay(new URL(db.url)).start();
    try {
      const url = new URL(db.url);
      url.host = `127.0.0.1:${relay.port}`;
      const s = await start({ DATABASE_URL: url.toString(), SHUTDOWN_TIMEOUT_MS: '300', NOTIFY_TIMEOUT_MS: '100' });
      expect((await fetch(s.url + '/readyz')).status).toBe(200);
      relay.hang();
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(1);
      // The grace: at least a national-system request's time-out (5 s) + 2 s.
      expect(s.stdout()).toContain('background jobs or the database did not stop within 7000 ms');
    } finally {
      relay.resume();
      await relay.close();
    }
  });

  it('a notification delivery in flight longer than SHUTDOWN_TIMEOUT_MS is waited for: exit 0, delivered once', async () => {
    // The receiver (a game's notify endpoint) answers 1.5 s after the notification arrives.
    let arrived!: () => void;
    const delivering = new Promise<void>((r) => (arrived = r));
    let received = 0;
    const receiver = http.createServer((req, res) => {
      received++;
      req.resume();
      arrived();
      setTimeout(() => res.end('{}'), 1500);
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    try {
      const s = await start({ SHUTDOWN_TIMEOUT_MS: '0', ALLOW_PRIVATE_NOTIFY_URLS: '1' });
      const game = await newGame(s.url);
      const uri = '/v1/server/create-order';
      const body = JSON.stringify(orderBody({ notify_url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/notify` }));
      const created = await fetch(s.url + uri, { method: 'POST', headers: signedInit(game, uri, body), body });
      expect(created.status).toBe(200);
      const { order_token } = await created.json();
      const paid = await fetch(`${s.url}/v1/client/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order_token, channel: 'sandbox' }) });
      expect(paid.status).toBe(200);
      await delivering;
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      expect(received).toBe(1);
    } finally {
      receiver.close();
    }
  });

  it('with TLS, open HTTP/2 sessions and a connection that never shook hands do not hold the exit', async () => {
    const { cert, key } = selfSignedCertificate(dataDir, 'proc-tls');
    const s = await start({ TLS_CERT: cert, TLS_KEY: key, SHUTDOWN_TIMEOUT_MS: '500' });
    expect(s.url).toMatch(/^https:/);
    const session = http2.connect(s.url, { rejectUnauthorized: false });
    const { port } = new URL(s.url);
    const silent = net.connect(Number(port), '127.0.0.1');
    silent.on('error', () => {});
    session.on('error', () => {});
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({ ':path': '/healthz' });
        req.on('response', (h) => resolve(Number(h[':status'])));
        req.on('error', reject);
        req.resume();
        req.end();
      });
      expect(status).toBe(200);
      await new Promise<void>((r) => (silent.connecting ? silent.once('connect', () => r()) : r()));
      s.child.kill('SIGTERM');
      // Without the shutdown's hold on them, the session lasted its 72 s idle time-out, and the
      // silent connection until its client closed it.
      expect(await s.exited).toBe(0);
    } finally {
      session.destroy();
      silent.destroy();
    }
  }, 30_000);

  it('SIGTERM when idle exits 0', async () => {
    const s = await start();
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
  });

  it('with SHUTDOWN_DELAY_MS, SIGTERM first takes /readyz out (503) while requests are still served; a second signal drains at once', async () => {
    const s = await start({ SHUTDOWN_DELAY_MS: '600000' });
    const game = await newGame(s.url);
    s.child.kill('SIGTERM');
    await s.logLine('leaving');
    const ready = await fetch(`${s.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ error: 'service_unavailable', message: 'the service is shutting down' });
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    const uri = '/v1/server/create-order';
    const body = JSON.stringify(orderBody());
    const created = await fetch(s.url + uri, { method: 'POST', headers: signedInit(game, uri, body), body });
    expect({ status: created.status, body: await created.json() }).toMatchObject({ status: 200, body: { order_id: expect.any(String) } });
    s.child.kill('SIGTERM');
    await s.logLine('second signal: draining now');
    expect(await s.exited).toBe(0);
  });

  it('the last log line of a shutdown ("stopped") is written before the exit, also while the thread pool is busy', async () => {
    // Log lines are written on the thread pool; with its one thread busy, an exit that does not
    // wait for the write loses the line.
    const s = await start({ UV_THREADPOOL_SIZE: '1', NODE_OPTIONS: `--require ${path.join(import.meta.dirname, 'helpers/busy-thread-pool.cjs')}` });
    const stdoutClosed = once(s.child.stdout!, 'close');
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    await stdoutClosed;
    const lines = s.stdout().trim().split('\n');
    expect(JSON.parse(lines[lines.length - 1]!)).toMatchObject({ msg: 'stopped' });
  });
});

describe('npm start', () => {
  // npm runs a script through `sh -c` and passes SIGTERM to that shell only: unless the shell
  // has become the service (`exec`), the service is orphaned and keeps running.
  it('SIGTERM to npm reaches the service: it drains, stops and exits, and npm exits 0', async () => {
    ensureServiceBuilt();
    // --ignore-scripts: run `start` on the build at hand, without `prestart`'s full build.
    const s = spawnCommand('npm', ['start', '--ignore-scripts'], env({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }));
    running.push(s);
    const listening = await s.logLine('service listening');
    const pid = listening.pid as number;
    try {
      expect((await fetch(`${listening.address as string}/healthz`)).status).toBe(200);
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      await s.logLine('draining');
      await s.logLine('stopped');
      expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
    } finally {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
  });
});

describe('the build (npm run build)', () => {
  // The worker threads are TypeScript modules of their own (src/lib/worker.ts): node runs their
  // compiled .js from dist/. They exist on SQLite only, so this runs on a SQLite file whatever
  // TEST_DB is.
  it('node dist/src/main.js starts each worker: WAL checkpointer, player index, order status counter', async () => {
    ensureServiceBuilt();
    for (const w of ['db/checkpointer-worker.js', 'db/player-index-worker.js', 'observability/status-counter-worker.js']) {
      expect(existsSync(path.join('dist/src', w)), w).toBe(true);
    }
    const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-built-'));
    try {
      const metricsToken = 'process-test-metrics-token-0123';
      const s = spawnCommand(process.execPath, ['dist/src/main.js'], env({
        DATABASE_URL: `sqlite:${path.join(dir, 'combo.db')}`,
        DATA_DIR: dir,
        METRICS_TOKEN: metricsToken,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'info',
      }));
      running.push(s);
      const url = String((await s.logLine('service listening')).address);
      const game = await newGame(url);
      const create = '/v1/server/create-order';
      const order = JSON.stringify(orderBody());
      expect((await fetch(url + create, { method: 'POST', headers: signedInit(game, create, order), body: order })).status).toBe(200);
      const enter = '/v1/server/enter-game';
      const session = JSON.stringify({ combo_id: 'built-1', session_id: `s-${randomBytes(4).toString('hex')}` });
      expect((await fetch(url + enter, { method: 'POST', headers: signedInit(game, enter, session), body: session })).status).toBe(200);
      const metrics = async () => (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
      await expect
        .poll(async () => {
          const text = await metrics();
          return {
            checkpoints: (sample(text, 'combo_sqlite_wal_checkpoints_total', { result: 'success' }) ?? 0) > 0,
            indexed: sample(text, 'combo_sqlite_player_index_sessions_total'),
            created: sample(text, 'combo_orders', { status: 'created' }),
          };
        }, { timeout: 20_000, interval: 200 })
        .toEqual({ checkpoints: true, indexed: 1, created: 1 });
      s.child.kill('SIGTERM');
      expect(await s.exited).toBe(0);
      expect(s.stdout()).not.toContain('"level":50');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});

describe('durability', () => {
  it('a 200 from create-order survives SIGKILL right after the answer', async () => {
    const s = await start();
    const game = await newGame(s.url);
    const uri = '/v1/server/create-order';
    const body = JSON.stringify(orderBody());
    const res = await fetch(s.url + uri, { method: 'POST', headers: signedInit(game, uri, body), body });
    const created = await res.json();
    expect(res.status).toBe(200);
    s.child.kill('SIGKILL');
    expect(await s.exited).toBe('SIGKILL');

    const database = openDatabase(db.url);
    try {
      const row = await database.db.selectFrom('orders').selectAll().where('order_id', '=', created.order_id).executeTakeFirst();
      expect(row?.game_id).toBe(game.gameId);
    } finally {
      await database.close();
    }

    // A restarted service on the same database and data directory knows the order: the replay
    // answers the original response.
    const again = await start();
    const replay = await fetch(again.url + uri, { method: 'POST', headers: signedInit(game, uri, body), body });
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual(created);
  });
});

describe('generated admin token', () => {
  it('ADMIN_TOKEN unset: a token is printed once on stderr with a warning, and it works', async () => {
    const s = await start({ ADMIN_TOKEN: undefined });
    // The warning is written right after "service listening": wait for it.
    const deadline = Date.now() + 10_000;
    while (!/ADMIN_TOKEN/.test(s.stderr()) && Date.now() < deadline) await new Promise((r) => s.child.stderr?.once('data', r));
    const stderr = s.stderr();
    expect(stderr).toMatch(/WARNING: ADMIN_TOKEN is not set/);
    const token = /\n\s+(adm_[A-Za-z0-9_-]+)\s*\n/.exec(stderr)?.[1];
    expect(token).toBeDefined();
    expect(stderr.split(token as string).length - 1).toBe(1);
    expect(s.stdout()).not.toContain(token as string);

    const ok = await adminCall(s.url, 'GET', '/admin/v1/games/no-such-game', undefined, token);
    expect(ok.status).toBe(404);
    const bad = await adminCall(s.url, 'GET', '/admin/v1/games/no-such-game', undefined, `${token}x`);
    expect(bad.status).toBe(401);
    s.child.kill('SIGTERM');
    expect(await s.exited).toBe(0);
    expect(s.stdout() + s.stderr()).not.toContain(`${token}x`);
    expect(s.stdout()).not.toContain(token as string);
  });
});

describe('bad configuration', () => {
  // Each variable's rule is unit-tested in config.test.ts; here: the process exits 2 with them.
  const bad: [string, Record<string, string>, string[]][] = [
    ['PORT=abc', { PORT: 'abc' }, ['PORT']],
    // proxy-addr would throw at start on a prefix longer than the address
    ['TRUST_PROXY=10.0.0.0/99', { TRUST_PROXY: '10.0.0.0/99' }, ['TRUST_PROXY']],
    [
      'all of them at once',
      { PORT: 'abc', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', SQLITE_SYNCHRONOUS: 'x', TLS_CERT: '/nonexistent/cert.pem' },
      ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'SQLITE_SYNCHRONOUS', 'TLS_CERT'],
    ],
  ];
  it.each(bad)('%s -> exit 2 naming the variable', async (_n, over, names) => {
    const s = spawnEntry('src/main.ts', { ...env(), PORT: '0', HOST: '127.0.0.1', ...over });
    running.push(s);
    expect(await s.exited).toBe(2);
    for (const n of names) expect(s.stderr()).toContain(n);
    expect(s.stderr()).not.toMatch(/\n\s+at /); // a message, not a stack trace
    expect(s.stdout()).not.toContain('service listening');
  });

  it('NODE_ENV=production without ADMIN_TOKEN -> exit 2 naming it; the migrate command needs none', async () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    const s = spawnEntry('src/main.ts', { ...env({ ADMIN_TOKEN: undefined }), NODE_ENV: 'production', SECRETS_KEY: key, PORT: '0', HOST: '127.0.0.1' });
    running.push(s);
    expect(await s.exited).toBe(2);
    expect(s.stderr()).toContain('ADMIN_TOKEN must be set when NODE_ENV=production');
    expect(s.stderr()).not.toMatch(/adm_/);
    const migrate = spawnEntry('src/cli.ts', { ...env({ ADMIN_TOKEN: undefined }), NODE_ENV: 'production', SECRETS_KEY: key }, ['migrate']);
    expect(await migrate.exited).toBe(0);
  });

  it('NODE_ENV=production without ADMIN_TOKEN or SECRETS_KEY -> exit 2 naming both, no stack', async () => {
    const s = spawnEntry('src/main.ts', { ...env({ ADMIN_TOKEN: undefined }), NODE_ENV: 'production', PORT: '0', HOST: '127.0.0.1' });
    running.push(s);
    expect(await s.exited).toBe(2);
    expect(s.stderr()).toContain('ADMIN_TOKEN must be set when NODE_ENV=production');
    expect(s.stderr()).toContain('SECRETS_KEY must be set when NODE_ENV=production');
    expect(s.stderr()).not.toMatch(/\n\s+at /);
  });

  it('a HOST that does not resolve -> exit 1 with one line naming HOST, no stack', async () => {
    const s = spawnEntry('src/main.ts', { ...env(), PORT: '0', HOST: 'no-such-host.invalid' });
    running.push(s);
    expect(await s.exited).toBe(1);
    expect(s.stderr()).toMatch(/^cannot listen on HOST=no-such-host\.invalid PORT=0: .*ENOTFOUND/m);
    expect(s.stderr()).not.toMatch(/\n\s+at /);
  });

  it('a database that cannot be reached or opened -> exit 1 with one line naming DATABASE_URL (no password), no stack', async () => {
    const probe = http.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const closed = (probe.address() as { port: number }).port; // nothing listens there once closed
    await new Promise((r) => probe.close(r));
    const cases: [string, RegExp][] = [
      [`postgres://combo:hunter2secret@127.0.0.1:${closed}/nodb`, new RegExp(`^cannot use the database of DATABASE_URL=postgres://combo:\\*\\*\\*@127\\.0\\.0\\.1:${closed}/nodb: .*ECONNREFUSED`, 'm')],
      ['sqlite:/etc/hostname/combo.db', /^cannot use the database of DATABASE_URL=sqlite:\/etc\/hostname\/combo\.db: .*(EEXIST|ENOTDIR)/m],
    ];
    for (const [url, line] of cases) {
      const s = spawnEntry('src/main.ts', { ...env(), DATABASE_URL: url, PORT: '0', HOST: '127.0.0.1' });
      running.push(s);
      expect(await s.exited).toBe(1);
      expect(s.stderr()).toMatch(line);
      expect(s.stderr()).not.toContain('hunter2secret');
      expect(s.stderr()).not.toMatch(/\n\s+at /);
    }
  });

  it('a SECRETS_KEY that does not open the stored secrets -> exit 2 with one line naming it; with the old key as SECRETS_KEY_PREVIOUS it starts', async () => {
    const own = await createTestDatabase();
    try {
      const [a, b] = [randomBytes(32).toString('base64'), randomBytes(32).toString('base64')];
      const first = await start({ DATABASE_URL: own.url, SECRETS_KEY: a });
      await newGame(first.url); // a game key, sealed with a
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      const wrong = spawnEntry('src/main.ts', { ...env({ DATABASE_URL: own.url, SECRETS_KEY: b }), PORT: '0', HOST: '127.0.0.1' });
      running.push(wrong);
      expect(await wrong.exited).toBe(2);
      expect(wrong.stderr()).toMatch(/^game_keys\.secret_enc holds values sealed with key id [0-9a-f]{8}, which SECRETS_KEY \(key id [0-9a-f]{8}\) and SECRETS_KEY_PREVIOUS do not open/m);
      expect(wrong.stderr()).toContain('; that key was SECRETS_KEY: set SECRETS_KEY to that key');
      expect(wrong.stderr()).not.toMatch(/\n\s+at /);
      const rotating = await start({ DATABASE_URL: own.url, SECRETS_KEY: b, SECRETS_KEY_PREVIOUS: a });
      expect((await fetch(`${rotating.url}/readyz`)).status).toBe(200);
    } finally {
      for (const s of running.splice(0)) {
        if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
        await s.exited;
      }
      await own.drop();
    }
  });

  it('a relative DATA_DIR read from another working directory -> exit 2 naming the key file used, the one that sealed the secrets, and what to set', async () => {
    const own = await createTestDatabase();
    const [home, elsewhere] = [mkdtempSync(path.join(os.tmpdir(), 'combo-home-')), mkdtempSync(path.join(os.tmpdir(), 'combo-elsewhere-'))];
    try {
      const relative = { DATABASE_URL: own.url, DATA_DIR: 'data', SECRETS_KEY: undefined };
      const first = await spawnService(env(relative), home);
      running.push(first);
      await newGame(first.url); // a game key, sealed with home/data/secrets.key
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);

      const moved = spawnEntry('src/main.ts', { ...env(relative), PORT: '0', HOST: '127.0.0.1' }, [], elsewhere);
      running.push(moved);
      expect(await moved.exited).toBe(2);
      const [homeKey, newKey] = [path.join(home, 'data', 'secrets.key'), path.join(elsewhere, 'data', 'secrets.key')];
      const line = moved.stderr().trim();
      expect(line.split('\n')).toHaveLength(1);
      expect(line).toContain(`sealed with key id `);
      expect(line).toContain(`which was the key file ${homeKey}`);
      expect(line).toContain(`this start used the key file ${newKey}`);
      expect(line).toContain(`SECRETS_KEY is not set`);
      expect(line).toContain(`created just now because DATA_DIR=data held no key file (a relative DATA_DIR, resolved from the working directory ${elsewhere})`);
      expect(line).toContain(`set DATA_DIR=${path.join(home, 'data')} (an absolute path), or SECRETS_KEY to that file's contents`);
      expect(line).not.toMatch(/\n\s+at /);
      // The key file that start made opens nothing: it is not left behind.
      expect(existsSync(newKey)).toBe(false);

      const fixed = await spawnService(env({ ...relative, DATA_DIR: path.join(home, 'data') }), elsewhere);
      running.push(fixed);
      expect((await fetch(`${fixed.url}/readyz`)).status).toBe(200);
    } finally {
      for (const s of running.splice(0)) {
        if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
        await s.exited;
      }
      await own.drop();
      rmSync(home, { recursive: true, force: true });
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  it('a database migrated by a newer release -> exit 1 with one line saying so, no stack; migrate says the same', async () => {
    const own = await createTestDatabase();
    try {
      const database = openDatabase(own.url);
      try {
        await migrateToLatest(database);
        await database.db.insertInto('kysely_migration' as never).values({ name: '9999_future', timestamp: new Date().toISOString() } as never).execute();
      } finally {
        await database.close();
      }
      const s = spawnEntry('src/main.ts', { ...env({ DATABASE_URL: own.url }), PORT: '0', HOST: '127.0.0.1' });
      running.push(s);
      expect(await s.exited).toBe(1);
      expect(s.stderr()).toMatch(/^cannot use the database of DATABASE_URL=.*: it was migrated by a newer release of this service \(migration 9999_future is unknown to this one\)/m);
      expect(s.stderr()).not.toMatch(/\n\s+at /);
      const m = spawnEntry('src/cli.ts', { DATABASE_URL: own.url, DATA_DIR: dataDir }, ['migrate']);
      running.push(m);
      expect(await m.exited).not.toBe(0);
      expect(m.stderr()).toContain('migrated by a newer release');
      expect(m.stderr()).not.toMatch(/\n\s+at /);
    } finally {
      await own.drop();
    }
  });

  it('a DATA_DIR that cannot hold the secrets key file -> exit 2 with one line naming it, no stack', async () => {
    const s = spawnEntry('src/main.ts', { ...env({ DATA_DIR: '/etc/hostname/combo' }), PORT: '0', HOST: '127.0.0.1' });
    running.push(s);
    expect(await s.exited).toBe(2);
    expect(s.stderr()).toMatch(/^cannot use DATA_DIR=\/etc\/hostname\/combo for the secrets key file \(or set SECRETS_KEY\): .*(ENOTDIR|EEXIST)/m);
    expect(s.stderr()).not.toMatch(/\n\s+at /);
  });

  it('NODE_ENV=prod starts with a warning that the production rules are off', async () => {
    const s = await start({ NODE_ENV: 'prod' });
    const warning = await s.logLine('NODE_ENV is "prod", not "production": the production rules (ADMIN_TOKEN and SECRETS_KEY required, internal URLs refused) are off');
    expect(warning.level).toBe(40);
  });
});

describe('migrate command', () => {
  it('applies the migrations on a fresh database, then says "up to date"', async () => {
    const fresh = await createTestDatabase();
    try {
      const first = spawnEntry('src/cli.ts', { DATABASE_URL: fresh.url, DATA_DIR: dataDir }, ['migrate']);
      expect(await first.exited).toBe(0);
      expect(first.stdout()).toMatch(/applied: 0001_initial/);
      const second = spawnEntry('src/cli.ts', { DATABASE_URL: fresh.url, DATA_DIR: dataDir }, ['migrate']);
      expect(await second.exited).toBe(0);
      expect(second.stdout()).toMatch(/up to date/);

      const database = openDatabase(fresh.url);
      try {
        // Every table of the schema exists.
        for (const table of ['games', 'game_keys', 'products', 'orders', 'sessions'] as const) {
          await database.db.selectFrom(table).selectAll().limit(1).execute();
        }
      } finally {
        await database.close();
      }
    } finally {
      await fresh.drop();
    }
  });

  it('a bad DATABASE_URL exits 2 naming it; an unknown command exits 2 with the usage', async () => {
    const bad = spawnEntry('src/cli.ts', { DATABASE_URL: 'mysql://x' }, ['migrate']);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toContain('DATABASE_URL');
    const unknown = spawnEntry('src/cli.ts', {}, ['frobnicate']);
    expect(await unknown.exited).toBe(2);
    expect(unknown.stderr()).toContain('migrate');
  });

  it.skipIf(TEST_DB !== 'postgres')('an unreachable PostgreSQL makes migrate exit non-zero with a message, not a hang', async () => {
    const s = spawnEntry('src/cli.ts', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none' }, ['migrate']);
    expect(await s.exited).toBe(1);
    expect(s.stderr()).toMatch(/^error: /m);
  });
});
