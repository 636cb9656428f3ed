/**
 * The overload scenarios of `npm run bench` (bench/run.ts), each on a service and database of
 * its own: `overload` (16x the connections against MAX_INFLIGHT_REQUESTS=256) and `overload5x`
 * (5x the sustainable create-order rate, open loop).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { authorizationHeader } from '../src/signing/signer.js';
import { ADMIN, cpuMs, createBenchGame, freePort, presigned, requestOptions, tenths, rssMb, type RequestStream } from './lib.js';
import { httpPost, openLoop, type OpenLoopResult } from './open-loop.js';
import { overloadFront, type Front } from './overload-proxy.js';
import { startBuiltService, type Started } from './run-load.js';
import { connections, duration } from './run-settings.js';

interface OverloadResult {
  connections: number;
  admittedPerSecond: number;
  shed: number;
  p99: number;
  rssStartMb: number;
  rssMaxMb: number;
}

interface LadderStep {
  rate: number;
  p99: number;
  non200: number;
}

interface Overload5xResult {
  closedLoop: number;
  ladder: LadderStep[];
  sustainable: number;
  sustainableCpuUs: number;
  targetRate: number;
  offeredPerSecond: number;
  maxLagMs: number;
  seconds: number;
  admitted: number;
  admittedPerSecond: number;
  admittedP50: number;
  admittedP99: number;
  admittedMax: number;
  shed: number;
  shedP50: number;
  shedP99: number;
  other: Record<string, number>;
  errors: number;
  cpuUsPerAnswer: number;
  /** With BENCH_OVERLOAD_PROXY: each proxy's CPU per answer and its RSS at most, edge first. */
  proxies: { name: string; cpuUsPerAnswer: number; rssMaxMb: number }[];
  rssStartMb: number;
  rssMaxMb: number;
  rssEndMb: number;
  maxInflight: string;
  maxDelay: string;
}

const OVERLOAD_SECONDS = Number(process.env.BENCH_OVERLOAD_SECONDS ?? 10);
const OVERLOAD_FACTOR = Number(process.env.BENCH_OVERLOAD_FACTOR ?? 5);
/** Pass bounds of the overload5x scenario. */
const OVERLOAD_P99_BOUND_MS = 100;
const OVERLOAD_RSS_BOUND_MB = 512;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The RSS (MB) of `pids`, sampled every `ms` until stop(): each one's at the start and at most. */
function sampleRss(pids: (number | undefined)[], ms: number): { start: number[]; max: number[]; stop: () => void } {
  const start = pids.map((pid) => rssMb(pid));
  const max = [...start];
  const sampler = setInterval(() => pids.forEach((pid, i) => (max[i] = Math.max(max[i]!, rssMb(pid)))), ms);
  return { start, max, stop: () => clearInterval(sampler) };
}

/**
 * The service of an overload scenario, with `env`, on a fresh SQLite file in `dir`, with `game`;
 * resolves to it and the game's secret.
 */
async function startOverloadService(dir: string, env: Record<string, string>, game: string, children: ChildProcess[]): Promise<Started & { secret: string }> {
  const port = await freePort();
  const svc = await startBuiltService(port, { PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dir, ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn', ...env });
  children.push(svc.child);
  return { ...svc, secret: await createBenchGame(svc.address, game) };
}

/** The overload scenario on a service of its own: 2 x `count` pre-signed create-orders (`orderBody`). */
export async function runOverload(game: string, count: number, orderBody: (i: number) => string, children: ChildProcess[], tempDirs: string[]): Promise<OverloadResult> {
  const odir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-overload-'));
  tempDirs.push(odir);
  const osvc = await startOverloadService(odir, { MAX_INFLIGHT_REQUESTS: '256', CLIENT_RATE_LIMIT_PER_SECOND: '1000000', MAX_INFLIGHT_PER_CLIENT_PERCENT: '100' }, game, children);
  process.stderr.write(`running overload for ${duration}s at ${connections * 16} connections...\n`);
  return overload(osvc.child.pid, osvc.address, presigned(count * 2, (i) => ({ path: '/v1/server/create-order', body: orderBody(i + 10_000_000) }), game, osvc.secret));
}

/**
 * Overload: 16x the connections of the other scenarios against a service whose
 * MAX_INFLIGHT_REQUESTS is 256, on create-order. It must admit what it can at its normal rate,
 * shed the rest with 503 at once, and keep its memory flat.
 */
async function overload(pid: number | undefined, url: string, source: RequestStream): Promise<OverloadResult> {
  const rss = sampleRss([pid], 200);
  const result = await autocannon({ url, connections: connections * 16, duration, ...requestOptions(source) });
  rss.stop();
  const stats = (result as unknown as { statusCodeStats?: Record<string, { count: number }> }).statusCodeStats ?? {};
  return {
    connections: connections * 16,
    admittedPerSecond: Math.round((stats['200']?.count ?? result['2xx']) / duration),
    shed: stats['503']?.count ?? 0,
    p99: result.latency.p99,
    rssStartMb: rss.start[0]!,
    rssMaxMb: rss.max[0]!,
  };
}

export function printOverload(over: OverloadResult): void {
  console.log(`\n| overload (create-order, MAX_INFLIGHT_REQUESTS=256) | connections | admitted (200)/s | shed (503) | p99 ms (all answers) | RSS start MB | RSS max MB |`);
  console.log('|---|---|---|---|---|---|---|');
  console.log(`| ${over.connections} connections | ${over.connections} | ${over.admittedPerSecond} | ${over.shed} | ${over.p99} | ${over.rssStartMb} | ${over.rssMaxMb} |`);
}

/** The overload5x scenario on a service of its own: `count` pre-signed create-orders (`orderBody`) per closed-loop run. */
export async function runOverload5x(game: string, count: number, orderBody: (i: number) => string, children: ChildProcess[], tempDirs: string[]): Promise<Overload5xResult> {
  // Its own service and database, with the default shedding settings (or those of this
  // environment: MAX_INFLIGHT_REQUESTS, MAX_EVENT_LOOP_DELAY_MS).
  const odir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-overload5x-'));
  tempDirs.push(odir);
  const osvc = await startOverloadService(odir, { CLIENT_RATE_LIMIT_PER_SECOND: '1000000', MAX_INFLIGHT_PER_CLIENT_PERCENT: '100' }, game, children);
  const front = await overloadFront(osvc.address, children, tempDirs);
  let batch = 0;
  process.stderr.write(`running overload5x: sustainable rate for ${duration}s at ${connections} connections...\n`);
  return overload5x(osvc.child.pid, osvc.address, front, () => {
    const b = ++batch;
    return presigned(count, (i) => ({ path: '/v1/server/create-order', body: orderBody(i + b * 20_000_000) }), game, osvc.secret);
  }, (i) => {
    const body = orderBody(i + 90_000_000);
    return httpPost('/v1/server/create-order', body, { authorization: authorizationHeader({ kind: 'game', id: game }, osvc.secret, 'POST', '/v1/server/create-order', body) });
  });
}

/**
 * Overload at 5x: the sustainable create-order rate is measured first: the closed-loop rate at
 * BENCH_CONNECTIONS (`duration` seconds), then constant arrival rates of 30, 50, 70, 85 and 100 %
 * of it (5 s each); the highest whose answers are all 200 with p99 <= 20 ms is the sustainable
 * rate (BENCH_SUSTAINABLE=closed: the closed-loop rate). Then create-order is offered at 5x that
 * rate at a constant arrival rate (open loop, bench/open-loop.ts, over BENCH_OVERLOAD_CONNECTIONS
 * keep-alive connections) for BENCH_OVERLOAD_SECONDS. Every answer is timed from its send, per
 * status: admitted (200) and shed (503/429) apart. Server RSS
 * is sampled every 100 ms; the service runs with its default shedding settings. With `front`
 * (BENCH_OVERLOAD_PROXY), the sustainable rate is measured on the service directly and the 5x
 * load is offered to the first of the proxies in front of it (over TLS if that one terminates it).
 */
async function overload5x(
  pid: number | undefined,
  url: string,
  front: Front | null,
  makeSetup: () => RequestStream,
  makeRequest: (i: number) => Buffer,
): Promise<Overload5xResult> {
  const cpu0 = cpuMs(pid);
  const base = await autocannon({ url, connections, duration, ...requestOptions(makeSetup()) });
  const closedLoop = Math.round(base.requests.average);
  const sustainableCpuUs = Math.round(((cpuMs(pid) - cpu0) * 1000) / Math.max(1, base.requests.total));
  await sleep(2000); // let the group commit and GC settle
  const { port } = new URL(url);
  let made = 0;
  const next = () => makeRequest(made++);
  const { ladder, sustainable } = await sustainableRate(Number(port), closedLoop, next);
  await sleep(2000);
  const targetRate = sustainable * OVERLOAD_FACTOR;
  const offered = await offer(pid, url, front, sustainable, targetRate, next);
  return {
    closedLoop,
    ladder,
    sustainable,
    sustainableCpuUs,
    targetRate,
    ...offered,
    maxInflight: process.env.MAX_INFLIGHT_REQUESTS ?? 'default',
    maxDelay: process.env.MAX_EVENT_LOOP_DELAY_MS ?? 'default',
  };
}

/**
 * Sustainable: the highest constant arrival rate (a ladder of fractions of the closed-loop
 * rate, 5 s each) whose answers are all 200 with p99 <= 20 ms.
 */
async function sustainableRate(port: number, closedLoop: number, next: () => Buffer): Promise<{ ladder: LadderStep[]; sustainable: number }> {
  const ladder: LadderStep[] = [];
  let sustainable = 0;
  // A fixed rate (BENCH_SUSTAINABLE=<req/s>) skips the ladder: for comparing settings at one load.
  const fixed = Number(process.env.BENCH_SUSTAINABLE);
  const fractions = Number.isFinite(fixed) && fixed > 0 ? [] : [0.3, 0.5, 0.7, 0.85, 1];
  for (let i = 0; i < fractions.length; i++) {
    const f = fractions[i]!;
    const step = await ladderStep(port, Math.round(closedLoop * f), next);
    ladder.push(step);
    if (step.non200 > 0 || !(step.p99 <= 20)) {
      // Not even the lowest step: halve it rather than fall back to the closed loop.
      if (sustainable === 0 && f > 0.1) {
        fractions.splice(i + 1, fractions.length, Math.round((f / 2) * 1000) / 1000);
        await sleep(1000);
        continue;
      }
      break;
    }
    sustainable = step.rate;
    await sleep(1000);
  }
  if (fractions.length === 0) sustainable = fixed;
  else if (process.env.BENCH_SUSTAINABLE === 'closed' || sustainable === 0) sustainable = closedLoop;
  return { ladder, sustainable };
}

/** One step of the ladder: `rate` for 5 s; the p99 of its 200s and how many answers were not 200. */
async function ladderStep(port: number, rate: number, next: () => Buffer): Promise<LadderStep> {
  const r = await openLoop({ host: '127.0.0.1', port, rate, seconds: 5, connections: 256, next });
  const ok = [...(r.byStatus['200'] ?? [])].sort((a, b) => a - b);
  const p99 = tenths(ok, 0.99);
  const non200 = r.sent - ok.length;
  process.stderr.write(`  open loop ${rate} req/s: p99 ${p99} ms, non-200 ${non200}\n`);
  return { rate, p99, non200 };
}

/** The 5x load itself: `targetRate` offered for BENCH_OVERLOAD_SECONDS, with the server's (and the proxies') CPU and RSS. */
async function offer(pid: number | undefined, url: string, front: Front | null, sustainable: number, targetRate: number, next: () => Buffer) {
  const overConnections = Number(process.env.BENCH_OVERLOAD_CONNECTIONS ?? 1024);
  const total = Math.round(targetRate * OVERLOAD_SECONDS);
  process.stderr.write(`sustainable ${sustainable} req/s; signing ${total} requests...\n`);
  const reqs = Array.from({ length: total }, () => next());
  process.stderr.write(`offering ${targetRate} req/s (open loop) for ${OVERLOAD_SECONDS}s over ${overConnections} connections...\n`);
  const procs = front?.procs ?? [];
  const rss = sampleRss([pid, ...procs.map((p) => p.pid)], 100);
  const cpu1 = cpuMs(pid);
  const proxyCpu1 = procs.map((p) => cpuMs(p.pid));
  let k = 0;
  const overPort = Number(new URL(front?.url ?? url).port);
  const r = await openLoop({ host: '127.0.0.1', port: overPort, tls: front?.url.startsWith('https:'), rate: targetRate, seconds: OVERLOAD_SECONDS, connections: overConnections, next: () => reqs[k++]!, drainMs: 10_000 });
  const cpu = cpuMs(pid) - cpu1;
  const proxyCpu = procs.map((p, i) => cpuMs(p.pid) - proxyCpu1[i]!);
  rss.stop();
  await sleep(2000);
  const rssEnd = rssMb(pid);
  const answers = Object.values(r.byStatus).reduce((a, v) => a + v.length, 0);
  return {
    ...answerFigures(r),
    cpuUsPerAnswer: Math.round((cpu * 1000) / Math.max(1, answers)),
    proxies: procs.map((p, i) => ({ name: p.name, cpuUsPerAnswer: Math.round((proxyCpu[i]! * 1000) / Math.max(1, answers)), rssMaxMb: rss.max[i + 1]! })),
    rssStartMb: rss.start[0]!,
    rssMaxMb: Math.max(rss.max[0]!, rssEnd),
    rssEndMb: rssEnd,
  };
}

/** What the open loop sent and how it was answered: admitted (200) and shed (503/429) apart. */
function answerFigures(r: OpenLoopResult) {
  const lat = r.byStatus;
  const seconds = r.seconds;
  const sorted = (a: number[] = []) => [...a].sort((x, y) => x - y);
  const ok = sorted(lat['200']);
  const shed = sorted([...(lat['503'] ?? []), ...(lat['429'] ?? [])]);
  const other = Object.fromEntries(Object.entries(lat).filter(([k]) => !['200', '503', '429'].includes(k)).map(([k, v]) => [k, v.length]));
  return {
    offeredPerSecond: Math.round(r.sent / seconds),
    maxLagMs: r.maxLagMs,
    seconds: Math.round(seconds * 10) / 10,
    admitted: ok.length,
    admittedPerSecond: Math.round(ok.length / seconds),
    admittedP50: tenths(ok, 0.5),
    admittedP99: tenths(ok, 0.99),
    admittedMax: tenths(ok, 1),
    shed: shed.length,
    shedP50: tenths(shed, 0.5),
    shedP99: tenths(shed, 0.99),
    other,
    errors: r.errors + r.unanswered,
  };
}

export function printOverload5x(o: Overload5xResult): void {
  const via = o.proxies.length ? `, through ${o.proxies.map((p) => p.name).join(', then ')}` : '';
  console.log(`\n| overload5x (create-order${via}; MAX_INFLIGHT_REQUESTS=${o.maxInflight}, MAX_EVENT_LOOP_DELAY_MS=${o.maxDelay}) | value |`);
  console.log('|---|---|');
  console.log(`| closed loop, ${connections} connections | ${o.closedLoop} req/s, ${o.sustainableCpuUs} µs CPU/req |`);
  console.log(`| open loop ladder (rate: p99 ms of 200s, non-200) | ${o.ladder.map((l) => `${l.rate}: ${l.p99}, ${l.non200}`).join('; ')} |`);
  console.log(`| sustainable rate (${process.env.BENCH_SUSTAINABLE === 'closed' ? 'closed loop' : Number(process.env.BENCH_SUSTAINABLE) > 0 ? 'fixed by BENCH_SUSTAINABLE' : 'highest open-loop rate with all 200 and p99 <= 20 ms'}) | ${o.sustainable} req/s |`);
  console.log(`| offered: target ${OVERLOAD_FACTOR}x = ${o.targetRate} req/s; achieved | ${o.offeredPerSecond} req/s for ${o.seconds} s (generator lag max ${o.maxLagMs} ms) |`);
  console.log(`| admitted (200) | ${o.admitted} (${o.admittedPerSecond}/s), p50 ${o.admittedP50} ms, p99 ${o.admittedP99} ms, max ${o.admittedMax} ms |`);
  console.log(`| shed (503/429) | ${o.shed}, p50 ${o.shedP50} ms, p99 ${o.shedP99} ms |`);
  console.log(`| other statuses; connection errors or unanswered | ${JSON.stringify(o.other)}; ${o.errors} |`);
  console.log(`| server CPU per answer | ${o.cpuUsPerAnswer} µs |`);
  for (const p of o.proxies) console.log(`| ${p.name}: CPU per answer; RSS max | ${p.cpuUsPerAnswer} µs; ${p.rssMaxMb} MB |`);
  console.log(`| server RSS start / max / end (2 s after) | ${o.rssStartMb} / ${o.rssMaxMb} / ${o.rssEndMb} MB |`);
  for (const [what, pass] of overload5xChecks(o)) console.log(`${pass ? 'PASS' : 'FAIL'}  ${what}`);
}

/** The pass conditions of overload5x: the load offered, memory bounded, the admitted answered in time, no errors. */
function overload5xChecks(o: Overload5xResult): [string, boolean][] {
  return [
    [`offered rate >= 90 % of ${OVERLOAD_FACTOR}x (${o.offeredPerSecond} of ${o.targetRate})`, o.offeredPerSecond >= 0.9 * o.targetRate],
    [
      `memory bounded: RSS max ${[o.rssMaxMb, ...o.proxies.map((p) => p.rssMaxMb)].join(' + ')} MB <= ${OVERLOAD_RSS_BOUND_MB} MB`,
      o.proxies.reduce((sum, p) => sum + p.rssMaxMb, o.rssMaxMb) <= OVERLOAD_RSS_BOUND_MB,
    ],
    [`admitted p99 ${o.admittedP99} ms <= ${OVERLOAD_P99_BOUND_MS} ms`, o.admittedP99 <= OVERLOAD_P99_BOUND_MS],
    [`no answer other than 200/503/429 (${Object.values(o.other).reduce((a, b) => a + b, 0)}), no connection error (${o.errors})`, Object.keys(o.other).length === 0 && o.errors === 0],
    ['some requests admitted', o.admitted > 0],
  ];
}
