/** The processes `npm run bench` (bench/run.ts) starts and the closed-loop load it puts on them. */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { copyOutput, cpuMs, keepOutput, postgresCpuMs, ready, requestOptions, spawnNode, systemCpuMs, tenths, type RequestStream } from './lib.js';
import { connections, onPostgres } from './run-settings.js';

export interface Result {
  name: string;
  /** CPU time the server process spent per request (user+sys), robust to a busy machine. */
  cpuUsPerReq: number;
  /** Of cpuUsPerReq, the kernel's part. */
  systemUsPerReq: number;
  /** CPU time of the local PostgreSQL server processes per request (BENCH_DATABASE_URL). */
  dbCpuUsPerReq?: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

/** A child process and the address it answers on. */
export interface Started {
  child: ChildProcess;
  address: string;
}

export function startChild(args: string[], env: Record<string, string>, loader = true, knownAddress?: string, cwd?: string): Promise<Started> {
  const child = spawnNode([...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...(loader ? ['--import', 'tsx'] : []), ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  if (knownAddress) {
    keepOutput(child);
    return ready(knownAddress, child).then(() => ({ child, address: knownAddress }));
  }
  return new Promise((resolve, reject) => {
    copyOutput(child);
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

/** The build's service (dist/src/main.js) on `port` with `env`, from the checkout at `cwd` (this one by default). */
export function startBuiltService(port: number, env: Record<string, string>, cwd?: string): Promise<Started> {
  return startChild(['dist/src/main.js'], env, false, `http://127.0.0.1:${port}`, cwd);
}

/** The highest rate any scenario has answered so far (sizes the pre-signed request pools). */
let fastestRps = 0;

/**
 * Pre-signed requests for a run of `seconds`: more than any server answers in that time. The
 * bare route runs first (in the warm-up and in every round) and nothing answers faster, so
 * its rate with a margin bounds the rest; a fixed 30,000 a second ran out on a fast VM.
 */
export function requestCount(seconds: number): number {
  return Math.max(50_000, Math.ceil(seconds * Math.max(30_000, fastestRps * 1.25)));
}

/**
 * The latency in ms of every 2xx response `run` receives, as autocannon measures it. Its own
 * percentiles come from a histogram of whole milliseconds: at a p99 of 3 ms that is up to a third
 * off, too coarse to compare one route's tail with another's.
 */
function recordLatencies(run: autocannon.Instance): number[] {
  const latencies: number[] = [];
  run.on('response', (_client: unknown, statusCode: number, _bytes: number, ms: number) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(ms);
  });
  return latencies;
}

export async function load(name: string, pid: number | undefined, url: string, seconds: number, source?: RequestStream, body?: string): Promise<Result> {
  const cpu0 = cpuMs(pid);
  const sys0 = systemCpuMs(pid);
  const db0 = onPostgres ? postgresCpuMs() : 0;
  const run = autocannon({
    url,
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    ...requestOptions(source),
  }) as unknown as autocannon.Instance & PromiseLike<autocannon.Result>;
  const latencies = recordLatencies(run);
  const result = await run;
  latencies.sort((a, b) => a - b);
  fastestRps = Math.max(fastestRps, result.requests.average);
  const cpu = cpuMs(pid) - cpu0;
  const sys = systemCpuMs(pid) - sys0;
  const perRequest = (ms: number) => Math.round((ms * 1000) / Math.max(1, result.requests.total));
  return {
    name,
    cpuUsPerReq: perRequest(cpu),
    systemUsPerReq: perRequest(sys),
    dbCpuUsPerReq: onPostgres && !name.startsWith('bare') ? perRequest(postgresCpuMs() - db0) : undefined,
    rps: Math.round(result.requests.average),
    p50: tenths(latencies, 0.5),
    p99: tenths(latencies, 0.99),
    non2xx: result.non2xx,
    errors: result.errors,
  };
}
