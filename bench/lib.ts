/** Helpers shared by the benchmarks that start the service from the build (bench/scale.ts). */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { authorizationHeader } from '../src/signing/signer.js';
import { httpPost } from './open-loop.js';

export const ADMIN = 'bench-admin-token-0123456789';

/**
 * BENCH_PIN=1 (Linux, `taskset`): the benchmark process (the load generator) runs on CPU 0 and
 * every process it starts on CPU 1, so on a 2-core machine the service has a core of its own
 * instead of competing with the generator for both.
 */
const pinned = process.env.BENCH_PIN === '1';
if (pinned) execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });

/** Spawns `node args` (on CPU 1 under BENCH_PIN=1; taskset execs node, so the pid is node's). */
export function spawnNode(args: string[], options: Parameters<typeof spawn>[2]): ChildProcess {
  return pinned ? spawn('taskset', ['-c', '1', process.execPath, ...args], options) : spawn(process.execPath, args, options);
}

/**
 * BENCH_SERVICE_OUT: a file every started server's standard output is appended to (V8's
 * `--trace-gc-nvp` or `--trace-opt` given in BENCH_NODE_ARGS write there, so do logs above
 * BENCH_LOG_LEVEL). Without it the output is drained: nobody reads it, and a full pipe would
 * block the child's logger.
 */
export function keepOutput(child: ChildProcess): void {
  if (!copyOutput(child)) child.stdout!.resume();
}

/** Appends the child's standard output to BENCH_SERVICE_OUT, if set; whether it does. */
export function copyOutput(child: ChildProcess): boolean {
  const file = process.env.BENCH_SERVICE_OUT;
  if (!file) return false;
  child.stdout!.on('data', (chunk: Buffer) => appendFileSync(file, chunk));
  return true;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** Resolves once GET /readyz answers 200. */
export async function ready(url: string, child: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${child.spawnfile ?? 'service'} exited with ${child.exitCode}`);
    if (await answersReady(url)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${child.spawnfile ?? 'service'} did not become ready`);
}

/**
 * Whether GET /readyz answers 200 (false while nothing listens). Over https the certificate is
 * not checked: it is a local proxy's own (BENCH_OVERLOAD_PROXY).
 */
function answersReady(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    const get = url.startsWith('https:') ? https.get : http.get;
    const req = get(`${url}/readyz`, { rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
  });
}

export interface Service {
  child: ChildProcess;
  address: string;
  stop(): Promise<void>;
}

/** Starts `node dist/src/main.js` (the build, as in production) with `env` on a free loopback port. */
export async function startService(env: Record<string, string>): Promise<Service> {
  const port = await freePort();
  const child = spawnNode(['dist/src/main.js'], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn', NODE_ENV: 'development', CLIENT_RATE_LIMIT_PER_SECOND: '1000000', MAX_INFLIGHT_PER_CLIENT_PERCENT: '100', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  keepOutput(child);
  const address = `http://127.0.0.1:${port}`;
  await ready(address, child);
  return {
    child,
    address,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export async function adminCall(base: string, method: string, p: string, body?: unknown): Promise<any> {
  const r = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}

/**
 * A game `game` for the benchmarks, with sandbox payments and a rate limit no run reaches, that
 * sells gem_60; resolves to its secret key.
 */
export async function createBenchGame(address: string, game: string): Promise<string> {
  const created = (await adminCall(address, 'POST', '/admin/v1/games', { game_id: game, name: 'Bench', rate_limit_per_second: 1_000_000, sandbox_payments: true })) as { secret_key: string };
  await adminCall(address, 'PUT', `/admin/v1/games/${game}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY' });
  return created.secret_key;
}

/**
 * The wechat-callback scenario's order: the game's wechat channel set to `wx`'s merchant (no
 * WeChat Pay server is needed: a callback is checked with keys alone), and one order to pay.
 */
export async function wechatPaidOrderSetup(address: string, game: string, secret: string, wx: { settings(): Record<string, unknown> }): Promise<string> {
  await adminCall(address, 'PUT', `/admin/v1/games/${game}/channels/wechat`, wx.settings());
  const p = '/v1/server/create-order';
  const body = orderRequestBody(`bench-wechat-${randomBytes(6).toString('hex')}`, 0);
  const r = await fetch(address + p, { method: 'POST', headers: { 'content-type': 'application/json', authorization: authorizationHeader({ kind: 'game', id: game }, secret, 'POST', p, body) }, body });
  if (r.status !== 200) throw new Error(`create-order: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { order_id: string }).order_id;
}

export interface BindingFixture {
  /** The local GM server (close it when done). */
  gm: http.Server;
  partnerId: string;
  partnerSecret: string;
  /** The query-binding URI of the one binding. */
  uri: string;
}

/**
 * query-binding on a warm role cache: a local GM server that answers one role to ListRoles, a
 * partner granted `game`, one binding (partner user `u1` -> player1/r1), and a first query
 * that fills the role cache.
 */
export async function bindingFixture(address: string, game: string, secret: string): Promise<BindingFixture> {
  const gm = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ roles: [{ server_id: 1, server_name: 'S1', role_id: 'r1', role_name: 'hero', role_level: 9, avatar_url: '', create_time: 1_700_000_000 }] }));
    });
  });
  await new Promise<void>((r) => gm.listen(0, '127.0.0.1', r));
  const partnerId = `bp${randomBytes(3).toString('hex')}`;
  await adminCall(address, 'PATCH', `/admin/v1/games/${game}`, { gm_url: `http://127.0.0.1:${(gm.address() as net.AddressInfo).port}/gm` });
  const partner = (await adminCall(address, 'POST', '/admin/v1/partners', { partner_id: partnerId, name: 'Bench', games: [game], rate_limit_per_second: 1_000_000 })) as { secret_key: string };
  const bindBody = JSON.stringify({ partner_id: partnerId, partner_user_id: 'u1', combo_id: 'player1', role_id: 'r1' });
  const bind = await fetch(`${address}/v1/server/bind-partner-user`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: authorizationHeader({ kind: 'game', id: game }, secret, 'POST', '/v1/server/bind-partner-user', bindBody) },
    body: bindBody,
  });
  if (bind.status !== 200) throw new Error(`bind: ${bind.status} ${await bind.text()}`);
  const uri = `/v1/query-binding?game_id=${game}&partner_user_id=u1`;
  const warm = await fetch(address + uri, { headers: { authorization: authorizationHeader({ kind: 'partner', id: partnerId }, partner.secret_key, 'GET', uri, '') } });
  if (warm.status !== 200) throw new Error(`query-binding: ${warm.status} ${await warm.text()}`);
  return { gm, partnerId, partnerSecret: partner.secret_key, uri };
}

/** The benchmarks' create-order body: request `i` of a stream, meta included; 5,000 distinct players taken in turn unless `player` is given. */
export function orderRequestBody(referenceId: string, i: number, player = `player${i % 5000}`): string {
  return JSON.stringify({
    reference_id: referenceId,
    combo_id: player,
    product_id: 'gem_60',
    platform: 'ios',
    notify_url: 'https://game.example.com/notify',
    quantity: 1,
    meta: { zone_id: 'z1', server_id: 's1', role_id: `r${i % 5000}`, role_name: 'bench', role_level: 12 },
  });
}

/**
 * Requests serialised before the run, handed to autocannon's connections in turn: every one is
 * sent once, whichever connection sends it. Through `setupRequest`, autocannon would rebuild each
 * request (copy its options, join the headers, two buffers), which costs the generator more CPU
 * per request than the bare route's one static request, on cores the generator shares with the
 * service (docs/benchmarks.md, "Method").
 */
export interface RequestStream {
  /** autocannon's per-connection hook: the connection's next request is the stream's next. */
  setupClient: (client: { getRequestBuffer: () => Buffer }) => void;
}

/** autocannon options that send `stream` (none: the options' own static request). */
export function requestOptions(stream: RequestStream | undefined): { setupClient?: never } {
  return stream ? { setupClient: stream.setupClient as never } : {};
}

/**
 * `count` distinct, already-signed POSTs (HMAC cost stays out of the measurement), serialised
 * once (open-loop.ts's httpPost, with `Connection: keep-alive` as autocannon writes it); past
 * `count` the stream starts again.
 */
export function presigned(count: number, make: (i: number) => { path: string; body: string }, game: string, secret: string): RequestStream {
  const list = Array.from({ length: count }, (_, i) => {
    const { path: p, body } = make(i);
    return httpPost(p, body, { connection: 'keep-alive', authorization: authorizationHeader({ kind: 'game', id: game }, secret, 'POST', p, body) });
  });
  let next = 0;
  return requestStream(() => {
    // A repeated request measures a replay (or, for the least work, fails): say so.
    if (next === list.length) process.stderr.write(`warning: all ${count} pre-signed requests sent; repeating them\n`);
    return list[next++ % list.length]!;
  });
}

/** A GET with an Authorization header, serialised as autocannon writes a request. */
export function signedGet(uri: string, authorization: string): Buffer {
  return Buffer.from(`GET ${uri} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\nauthorization: ${authorization}\r\n\r\n`, 'latin1');
}

/** A stream whose every connection takes its next request from `next`. */
export function requestStream(next: () => Buffer): RequestStream {
  return {
    setupClient: (client) => {
      client.getRequestBuffer = next;
    },
  };
}

/** [user, system] CPU ms in a /proc/<pid>/stat line (fields after the command name). */
function statCpu(stat: string): [number, number] {
  const f = stat.split(') ')[1]!.split(' ');
  return [(Number(f[11]) * 1000) / 100, (Number(f[12]) * 1000) / 100]; // clock ticks (USER_HZ = 100)
}

function statCpuMs(stat: string): number {
  const [user, system] = statCpu(stat);
  return user + system;
}

/** user+system CPU ms of a process so far, from /proc (Linux). */
export function cpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return NaN;
  }
}

/**
 * The system (kernel) part of cpuMs: for a route that writes, SQLite's file I/O (WAL appends,
 * checkpoints) shows here, and no instruction count of ours includes it.
 */
export function systemCpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    return statCpu(readFileSync(`/proc/${pid}/stat`, 'utf8'))[1];
  } catch {
    return NaN;
  }
}

/**
 * CPU time (ms) of every PostgreSQL server process on this machine (the backends serving the
 * service): with BENCH_DATABASE_URL on a local PostgreSQL, part of each request's cost.
 */
export function postgresCpuMs(): number {
  let total = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      if (stat.includes('(postgres)')) total += statCpuMs(stat);
    } catch {
      /* the process ended */
    }
  }
  return total;
}

export function rssMb(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

/** Quantile of a sorted array (nearest rank). */
export function quantile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(sorted.length * p) - 1))]!;
}

/** The `p` quantile of `sorted` in ms, to a tenth (NaN when empty). */
export function tenths(sorted: number[], p: number): number {
  return Math.round(quantile(sorted, p) * 10) / 10;
}

/** The median; for an even count, the mean of the two middle values. */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
