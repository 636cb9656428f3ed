/**
 * The tables of the closed-loop scenarios of `npm run bench` (bench/run.ts): every run, the
 * summary over the rounds and the comparison with BENCH_BASELINE, with their PASS/FAIL checks.
 */
import os from 'node:os';
import { median } from './lib.js';
import type { Result } from './run-load.js';
import { BASELINE_LABEL, baselineDir, connections, databaseUrl, duration, onPostgres } from './run-settings.js';

/** The reference of every ratio: the bare route, loaded with one static request. */
export const BARE = 'bare fastify route';
export const BARE_MATCHED = "bare route at create-order's req/s";

/** The issue targets (ratio of req/s to the bare route; p99 at 64 connections). */
const TARGETS: Record<string, number> = { 'create-order': 0.35, 'enter-game': 0.5, 'query-binding (warm cache)': 0.6 };
const P99_TARGET_MS = 20;
/** create-order's p99 at most this many times the bare route's, in every round (a tail of its own, not the machine's). */
const P99_TO_BARE = 3;
/** The least share of the baseline's req/s a scenario must keep (no route more than 5 % slower). */
const BASELINE_FLOOR = 0.95;

/**
 * p99 over the mean latency, which a closed loop fixes at connections / throughput (Little's
 * law): how long the tail is for this machine, whatever the route's speed.
 */
function tailFactor(r: Result): number {
  return r.p99 / ((connections / Math.max(1, r.rps)) * 1000);
}

/** The machine, the database and every run of every round, each with its ratios to the bare run of its round. */
export function printResultTable(byRound: Result[][]): void {
  const bareOf = (r: Result) => byRound.find((rs) => rs.includes(r))?.find((b) => b.name === BARE);
  console.log(`\n${new Date().toISOString()}  ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), node ${process.version}, ${connections} connections, ${duration}s each\n`);
  console.log(`database: ${databaseUrl ? databaseUrl.replace(/\/\/[^@/]*@/, '//') : 'a fresh SQLite file'}`);
  const dbCol = onPostgres ? ' PostgreSQL CPU µs/req |' : '';
  console.log(`| scenario | req/s | p50 ms | p99 ms | p99 / mean latency | ratio to bare | server CPU µs/req | of which kernel | CPU ratio (bare/this) |${dbCol} non-2xx | errors |`);
  console.log(`|---|---|---|---|---|---|---|---|---|${onPostgres ? '---|' : ''}---|---|`);
  for (const r of byRound.flat()) {
    const bare = bareOf(r);
    const ratio = bare ? (r.rps / bare.rps).toFixed(2) : '-';
    const cpuRatio = bare ? (bare.cpuUsPerReq / r.cpuUsPerReq).toFixed(2) : '-';
    const dbCell = onPostgres ? ` ${r.dbCpuUsPerReq ?? '-'} |` : '';
    console.log(`| ${r.name} | ${r.rps} | ${r.p50} | ${r.p99} | ${tailFactor(r).toFixed(1)} | ${ratio} | ${r.cpuUsPerReq} | ${r.systemUsPerReq} | ${cpuRatio} |${dbCell} ${r.non2xx} | ${r.errors} |`);
  }
}

/** A scenario's run in one round beside that round's bare run. */
interface WithBare {
  r: Result;
  bare: Result;
}

/** Per scenario over the rounds: median and range of the ratio to the same round's bare run. */
export function printRoundSummary(byRound: Result[][]): void {
  const names = [...new Set(byRound.flat().map((r) => r.name))];
  console.log(`\n${byRound.length} rounds | median ratio to bare (min-max) | median CPU ratio | median p99 ms | median p99 / mean latency | target`);
  console.log('|---|---|---|---|---|---|');
  const checks: string[] = [];
  for (const name of names) {
    const rows = byRound.map((rs) => ({ r: rs.find((x) => x.name === name), bare: rs.find((x) => x.name === BARE) })).filter((x) => x.r && x.bare) as WithBare[];
    const ratios = rows.map(({ r, bare }) => r.rps / bare.rps);
    const ratio = median(ratios);
    const cpu = median(rows.map(({ r, bare }) => bare.cpuUsPerReq / r.cpuUsPerReq));
    const p99 = median(rows.map(({ r }) => r.p99));
    const target = TARGETS[name];
    console.log(`| ${name} | ${ratio.toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}) | ${cpu.toFixed(2)} | ${p99} | ${median(rows.map(({ r }) => tailFactor(r))).toFixed(1)} | ${target ? `>= ${target}` : '-'} |`);
    checks.push(...roundChecks(name, rows, ratio, p99));
  }
  for (const line of checks) console.log(line);
}

/** The checks of one scenario over the rounds: its median `ratio` to the bare route and its median `p99`. */
function roundChecks(name: string, rows: WithBare[], ratio: number, p99: number): string[] {
  const checks: string[] = [];
  const target = TARGETS[name];
  if (target) checks.push(`${ratio >= target ? 'PASS' : 'FAIL'}  ${name}: median ratio ${ratio.toFixed(2)} >= ${target}`);
  if (name === 'create-order' || name === 'enter-game') checks.push(`${p99 <= P99_TARGET_MS ? 'PASS' : 'FAIL'}  ${name}: median p99 ${p99} ms <= ${P99_TARGET_MS} ms`);
  if (name === 'create-order') {
    const each = rows.map(({ r, bare }) => `${r.p99}/${bare.p99}`).join(', ');
    const within = rows.every(({ r, bare }) => r.p99 <= P99_TO_BARE * bare.p99);
    checks.push(`${within ? 'PASS' : 'FAIL'}  ${name}: p99 <= ${P99_TO_BARE}x the bare route's in each round (${each} ms)`);
  }
  // Not a target: how far the machine itself is from the p99 target at create-order's throughput.
  if (name === BARE_MATCHED) checks.push(`NOTE  ${name}: median p99 ${p99} ms (this machine's p99 for a route as fast as create-order with no signature, database or group commit)`);
  return checks;
}

/**
 * Each scenario against the baseline's in the same round (req/s and CPU per request), the
 * median over the rounds, PASS when it keeps BASELINE_FLOOR of the baseline's req/s.
 */
export function printBaselineComparison(byRound: Result[][]): void {
  console.log(`\nthis build against BENCH_BASELINE (${baselineDir}), per round: req/s ratio (this / baseline), CPU per request ratio (baseline / this)`);
  console.log('| scenario | req/s ratio per round | median | CPU ratio per round | median |\n|---|---|---|---|---|');
  const checks: string[] = [];
  const names = [...new Set(byRound.flat().map((r) => r.name))].filter((n) => byRound.some((rs) => rs.some((r) => r.name === `${n}${BASELINE_LABEL}`)));
  for (const name of names) {
    const pairs = byRound.map((rs) => [rs.find((r) => r.name === name), rs.find((r) => r.name === `${name}${BASELINE_LABEL}`)]).filter((p): p is [Result, Result] => !!p[0] && !!p[1]);
    const rps = pairs.map(([r, b]) => r.rps / b.rps);
    const cpu = pairs.map(([r, b]) => b.cpuUsPerReq / r.cpuUsPerReq);
    const m = median(rps);
    console.log(`| ${name} | ${rps.map((x) => x.toFixed(2)).join(', ')} | ${m.toFixed(2)} | ${cpu.map((x) => x.toFixed(2)).join(', ')} | ${median(cpu).toFixed(2)} |`);
    checks.push(`${m >= BASELINE_FLOOR ? 'PASS' : 'FAIL'}  ${name}: median req/s at least ${BASELINE_FLOOR} of the baseline's (${m.toFixed(2)})`);
  }
  for (const line of checks) console.log(line);
}
