/**
 * Measurements: create-order and enter-game on the empty and the full database's services, back
 * to back (autocannon, pre-signed unique requests; req/s, p50/p99 and server CPU µs per request).
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { cpuMs, orderRequestBody, presigned, requestOptions, type RequestStream, type Service } from './lib.js';
import type { Setup } from './scale-databases.js';
import { PLAYERS } from './scale-rows.js';
import { ROUNDS, WARMUP, connections, duration, log } from './scale-settings.js';

interface Throughput {
  rps: number;
  p50: number;
  p99: number;
  cpuUsPerReq: number;
  non2xx: number;
}

export interface ThroughputRow {
  what: string;
  round: number;
  e: Throughput;
  f: Throughput;
}

/** A running service and the setup of the database it serves. */
export interface Measured {
  svc: Service;
  setup: Setup;
}

const GAME = 'scale_g1';
const SCENARIOS = [
  ['create-order', createOrders],
  ['enter-game', enterGames],
] as const;

async function throughput(svc: Service, source: RequestStream): Promise<Throughput> {
  const cpu0 = cpuMs(svc.child.pid);
  const r = await autocannon({ url: svc.address, connections, duration, ...requestOptions(source) });
  const cpu = cpuMs(svc.child.pid) - cpu0;
  return { rps: Math.round(r.requests.average), p50: r.latency.p50, p99: r.latency.p99, cpuUsPerReq: Math.round((cpu * 1000) / Math.max(1, r.requests.total)), non2xx: r.non2xx };
}

let runNo = 0;
/** A stream's unique part of its request ids, and how many requests it pre-signs. */
function nextRun(): { run: string; n: number } {
  return { run: `${randomBytes(4).toString('hex')}-${runNo++}`, n: Math.max(50_000, duration * 30_000) };
}

/** Seeded players, taken in turn. */
const seededPlayer = (i: number) => `p${String((i * 7919) % PLAYERS).padStart(7, '0')}`;

function createOrders(secret: string, game: string) {
  const { run, n } = nextRun();
  // existing players (the purchase guard reads their month's orders)
  return presigned(n, (i) => ({ path: '/v1/server/create-order', body: orderRequestBody(`bench-${run}-${i}`, i, seededPlayer(i)) }), game, secret);
}

function enterGames(secret: string, game: string) {
  const { run, n } = nextRun();
  return presigned(n, (i) => ({ path: '/v1/server/enter-game', body: JSON.stringify({ combo_id: seededPlayer(i), session_id: `bench-${run}-${i}` }) }), game, secret);
}

/** ROUNDS of each scenario, on `empty` then on `full`, after an untimed warm-up of both. */
export async function measureThroughput(kind: string, empty: Measured, full: Measured): Promise<ThroughputRow[]> {
  const rows: ThroughputRow[] = [];
  // Warm-up, not counted: the first seconds on a large file fill the page caches.
  for (const [label, m] of [['empty', empty], ['full', full]] as const) {
    log(`${kind}: warm-up ${WARMUP} s (${label})...`);
    for (const [, make] of SCENARIOS) await autocannon({ url: m.svc.address, connections, duration: WARMUP, ...requestOptions(make(m.setup.secrets[GAME]!, GAME)) });
  }
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [what, make] of SCENARIOS) {
      log(`${kind} round ${round}: ${what}, empty database...`);
      const e = await throughput(empty.svc, make(empty.setup.secrets[GAME]!, GAME));
      log(`  ${e.rps} req/s, ${e.cpuUsPerReq} µs/req; full database...`);
      const f = await throughput(full.svc, make(full.setup.secrets[GAME]!, GAME));
      log(`  ${f.rps} req/s, ${f.cpuUsPerReq} µs/req`);
      rows.push({ what, round, e, f });
    }
  }
  return rows;
}

/** The report's lines on throughput: a row per measurement, then each scenario's verdict. */
export function throughputReport(rows: ThroughputRow[]): string[] {
  const out = ['| scenario | round | empty req/s | full req/s | full/empty | empty µs/req | full µs/req | empty/full CPU | p99 ms empty / full | non-2xx |', '|---|---|---|---|---|---|---|---|---|---|'];
  for (const r of rows) {
    out.push(`| ${r.what} | ${r.round} | ${r.e.rps} | ${r.f.rps} | ${(r.f.rps / r.e.rps).toFixed(2)} | ${r.e.cpuUsPerReq} | ${r.f.cpuUsPerReq} | ${(r.e.cpuUsPerReq / r.f.cpuUsPerReq).toFixed(2)} | ${r.e.p99} / ${r.f.p99} | ${r.e.non2xx + r.f.non2xx} |`);
  }
  for (const [what] of SCENARIOS) {
    const rs = rows.filter((r) => r.what === what);
    const ratio = rs.reduce((a, r) => a + r.f.rps, 0) / rs.reduce((a, r) => a + r.e.rps, 0);
    const cpu = rs.reduce((a, r) => a + r.e.cpuUsPerReq, 0) / rs.reduce((a, r) => a + r.f.cpuUsPerReq, 0);
    out.push(`\n${what}: full/empty throughput ${ratio.toFixed(2)}, CPU per request empty/full ${cpu.toFixed(2)}: ${ratio >= 0.8 ? 'PASS' : 'FAIL'} (target >= 0.80)`);
  }
  return out;
}
