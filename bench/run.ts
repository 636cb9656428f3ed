/**
 * `npm run bench`: starts the service on a fresh SQLite database (a child process, as in
 * production) and a bare Fastify route (another child), loads each with autocannon at 64
 * connections using pre-signed unique requests, and prints req/s, p50 and p99 per endpoint and
 * each endpoint's ratio to the bare route.
 *
 * Settings: BENCH_DURATION (s, default 10), BENCH_CONNECTIONS (default 64), BENCH_ONLY
 * (comma list of scenario names).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { authorizationHeader } from '../src/signing/signer.js';

const duration = Number(process.env.BENCH_DURATION ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
const only = process.env.BENCH_ONLY?.split(',');
const ADMIN = 'bench-admin-token-0123456789';

interface Result {
  name: string;
  /** CPU time the server process spent per request (user+sys), robust to a busy machine. */
  cpuUsPerReq: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** Resolves once GET /readyz answers 200 (the service logs nothing below warn here). */
async function ready(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('service did not become ready');
}

function startChild(args: string[], env: Record<string, string>, loader = true, knownAddress?: string): Promise<{ child: ChildProcess; address: string }> {
  const child = spawn(process.execPath, [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...(loader ? ['--import', 'tsx'] : []), ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  if (knownAddress) return ready(knownAddress, child).then(() => ({ child, address: knownAddress }));
  return new Promise((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.on('line', (line) => {
      try {
        const j = JSON.parse(line);
        if (j.address && (j.msg === 'service listening' || !j.msg)) resolve({ child, address: j.address });
      } catch {
        /* not JSON */
      }
    });
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

async function adminCall(base: string, method: string, p: string, body: unknown) {
  const r = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}

/** A generator of distinct, already-signed requests (HMAC cost stays out of the measurement). */
function presigned(count: number, make: (i: number) => { path: string; body: string }, game: string, secret: string) {
  const list = Array.from({ length: count }, (_, i) => {
    const { path: p, body } = make(i);
    return {
      method: 'POST' as const,
      path: p,
      body,
      headers: { 'content-type': 'application/json', authorization: authorizationHeader({ kind: 'game', id: game }, secret, 'POST', p, body) },
    };
  });
  let next = 0;
  return (req: Record<string, unknown>) => {
    const r = list[next++ % list.length]!;
    return Object.assign(req, r);
  };
}

/** user+system CPU ms of a process so far, from /proc (Linux). */
function cpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}

async function load(name: string, pid: number | undefined, url: string, setupRequest?: (r: Record<string, unknown>) => Record<string, unknown>, body?: string): Promise<Result> {
  const cpu0 = cpuMs(pid);
  const result = await autocannon({
    url,
    connections,
    duration,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    requests: setupRequest ? [{ setupRequest: setupRequest as never }] : undefined,
  });
  const cpu = cpuMs(pid) - cpu0;
  return {
    name,
    cpuUsPerReq: Math.round((cpu * 1000) / Math.max(1, result.requests.total)),
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-'));
  const children: ChildProcess[] = [];
  try {
    // The service runs from the compiled build, as in production (`npm run bench` builds first).
    const port = await freePort();
    const svc = await startChild(['dist/src/main.js'], {
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ADMIN_TOKEN: ADMIN,
      // Request logs off, as the bare route logs nothing (BENCH_LOG_LEVEL=info to include them).
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
      NODE_ENV: 'development',
    }, false, `http://127.0.0.1:${port}`);
    children.push(svc.child);
    const bare = await startChild(['bench/bare-server.ts'], {});
    children.push(bare.child);

    const game = `bench_${randomBytes(3).toString('hex')}`;
    const created = (await adminCall(svc.address, 'POST', '/admin/v1/games', { game_id: game, name: 'Bench', rate_limit_per_second: 1_000_000 })) as { secret_key: string };
    await adminCall(svc.address, 'PUT', `/admin/v1/games/${game}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY' });
    const secret = created.secret_key;
    const n = Math.max(50_000, duration * 30_000);
    const run = randomBytes(4).toString('hex');
    const orderBody = (i: number) =>
      JSON.stringify({
        reference_id: `bench-${run}-${i}`,
        combo_id: `player${i % 5000}`,
        product_id: 'gem_60',
        platform: 'ios',
        notify_url: 'https://game.example.com/notify',
        quantity: 1,
        meta: { zone_id: 'z1', server_id: 's1', role_id: `r${i % 5000}`, role_name: 'bench', role_level: 12 },
      });

    const scenarios: { name: string; go: () => Promise<Result> }[] = [
      { name: 'bare', go: () => load('bare fastify route', bare.child.pid, `${bare.address}/bare`, undefined, orderBody(0)) },
      {
        name: 'create-order',
        go: () => load('create-order', svc.child.pid, svc.address, presigned(n, (i) => ({ path: '/v1/server/create-order', body: orderBody(i) }), game, secret)),
      },
      {
        name: 'enter-game',
        go: () =>
          load(
            'enter-game',
            svc.child.pid,
            svc.address,
            presigned(n, (i) => ({ path: '/v1/server/enter-game', body: JSON.stringify({ combo_id: `player${i % 5000}`, session_id: `s-${run}-${i}` }) }), game, secret),
          ),
      },
    ];

    const results: Result[] = [];
    for (const s of scenarios) {
      if (only && !only.includes(s.name)) continue;
      process.stderr.write(`running ${s.name} for ${duration}s at ${connections} connections...\n`);
      results.push(await s.go());
    }
    const bareRps = results.find((r) => r.name.startsWith('bare'))?.rps;
    console.log(`\n${new Date().toISOString()}  ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), node ${process.version}, ${connections} connections, ${duration}s each\n`);
    const bareCpu = results.find((r) => r.name.startsWith('bare'))?.cpuUsPerReq;
    console.log('| scenario | req/s | p50 ms | p99 ms | ratio to bare | server CPU µs/req | CPU ratio (bare/this) | non-2xx | errors |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of results) {
      const ratio = bareRps ? (r.rps / bareRps).toFixed(2) : '-';
      const cpuRatio = bareCpu ? (bareCpu / r.cpuUsPerReq).toFixed(2) : '-';
      console.log(`| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${ratio} | ${r.cpuUsPerReq} | ${cpuRatio} | ${r.non2xx} | ${r.errors} |`);
    }
  } finally {
    for (const c of children) c.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
