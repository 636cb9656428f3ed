/**
 * The proxies the overload5x scenario of `npm run bench` (bench/overload.ts) can offer its load
 * through (BENCH_OVERLOAD_PROXY): the shipped deploy/haproxy.cfg, and deploy/Caddyfile before it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { selfSignedCertificate } from '../test/helpers/certificates.js';
import { freePort, ready } from './lib.js';
import type { Started } from './run-load.js';

/** The proxies the overload is offered through: `url` is the first's, `procs` edge first. */
export interface Front {
  url: string;
  procs: { name: string; pid: number | undefined }[];
}

/**
 * BENCH_OVERLOAD_PROXY: unset or empty (none), `haproxy`, `haproxy-tls` (HAProxy terminating
 * TLS itself) or `caddy` (Caddy terminating TLS, then HAProxy).
 */
function overloadProxy(value: string | undefined): 'haproxy' | 'haproxy-tls' | 'caddy' | null {
  if (value === undefined || value === '') return null;
  if (value === 'haproxy' || value === 'haproxy-tls' || value === 'caddy') return value;
  throw new Error(`BENCH_OVERLOAD_PROXY must be haproxy, haproxy-tls, caddy or unset, not ${JSON.stringify(value)}`);
}

/**
 * BENCH_OVERLOAD_PROXY=haproxy: the 5x load goes through deploy/haproxy.cfg (its
 * admission limit) instead of straight to the service; =haproxy-tls: the same, HAProxy
 * terminating TLS (COMBO_TLS_CERT, as deploy/compose.edge.yaml runs it); =caddy: through
 * deploy/Caddyfile (TLS) and then that HAProxy, as deploy/compose.yaml runs them. The
 * sustainable rate is still the service's own, measured without the proxies, so the load
 * is the same 5x either way. Null without BENCH_OVERLOAD_PROXY.
 */
export async function overloadFront(service: string, children: ChildProcess[], tempDirs: string[]): Promise<Front | null> {
  const proxy = overloadProxy(process.env.BENCH_OVERLOAD_PROXY);
  if (!proxy) return null;
  const cdir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-proxy-'));
  tempDirs.push(cdir);
  const h = await startHaproxy(service, proxy === 'haproxy-tls' ? selfSignedCertificate(cdir).pem : undefined);
  children.push(h.child);
  const tls = proxy === 'haproxy-tls' ? ', TLS' : '';
  const front = { url: h.address, procs: [{ name: `HAProxy (deploy/haproxy.cfg${tls})`, pid: h.child.pid }] };
  if (proxy !== 'caddy') return front;
  const c = await startCaddy(h.address, cdir);
  children.push(c.child);
  return { url: c.address, procs: [{ name: 'Caddy (deploy/Caddyfile)', pid: c.child.pid }, ...front.procs] };
}

/** Spawns the proxy `command` in the foreground; rejects when it is not on the PATH. */
async function spawnProxy(command: 'haproxy' | 'caddy', args: string[], env: NodeJS.ProcessEnv, stdio: 'inherit' | 'ignore'): Promise<ChildProcess> {
  const child = spawn(command, args, { env, stdio: ['ignore', stdio, stdio] });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (e) => reject(new Error(`BENCH_OVERLOAD_PROXY=${command} needs ${command} on the PATH (${e.message})`)));
  });
  return child;
}

/**
 * HAProxy with the shipped deploy/haproxy.cfg in front of `service` (its COMBO_* settings from
 * this environment, the addresses from here), in the foreground, terminating TLS with `tlsCert`
 * (COMBO_TLS_CERT); resolves once /readyz answers through it.
 */
async function startHaproxy(service: string, tlsCert?: string): Promise<Started> {
  const port = await freePort();
  const env = { ...process.env, COMBO_LISTEN: `127.0.0.1:${port}`, COMBO_SERVER_1: new URL(service).host, ...(tlsCert ? { COMBO_TLS_CERT: tlsCert } : {}) };
  const child = await spawnProxy('haproxy', ['-f', 'deploy/haproxy.cfg'], env, 'inherit');
  const address = `${tlsCert ? 'https' : 'http'}://127.0.0.1:${port}`;
  await ready(address, child, 15_000);
  return { child, address };
}

/**
 * Caddy with the shipped deploy/Caddyfile in front of `upstream` (HAProxy), in the foreground:
 * TLS with Caddy's own certificate for 127.0.0.1 (its data under `dir`), free ports. Resolves
 * once /readyz answers 200 through it.
 */
async function startCaddy(upstream: string, dir: string): Promise<Started> {
  const [port, httpPort] = [await freePort(), await freePort()];
  const env = {
    ...process.env, PUBLIC_HOST: '127.0.0.1', COMBO_HTTPS_PORT: String(port), COMBO_HTTP_PORT: String(httpPort),
    COMBO_ADMISSION: new URL(upstream).host, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir,
  };
  const child = await spawnProxy('caddy', ['run', '--config', 'deploy/Caddyfile', '--adapter', 'caddyfile'], env, 'ignore');
  const address = `https://127.0.0.1:${port}`;
  await ready(address, child, 15_000);
  return { child, address };
}
