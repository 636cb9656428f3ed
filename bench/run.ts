/**
 * `npm run bench`: starts the service on a fresh SQLite database (a child process, as in
 * production) and a bare Fastify route (another child), loads each with autocannon at 64
 * connections using pre-signed unique requests, and prints req/s, p50 and p99 per endpoint and
 * each endpoint's ratio to the bare route.
 *
 * Settings: BENCH_DURATION (s, default 10), BENCH_WARMUP (s each scenario runs unrecorded before
 * round 1, default 3; 0: none), BENCH_CONNECTIONS (default 64), BENCH_ONLY
 * (comma list of scenario names), BENCH_OVERLOAD_SECONDS
 * (10), BENCH_OVERLOAD_FACTOR (5), BENCH_OVERLOAD_CONNECTIONS (1024), BENCH_SUSTAINABLE (`open`,
 * `closed`, or a number of req/s: how the overload5x scenario defines the sustainable rate),
 * BENCH_OVERLOAD_PROXY (`haproxy`: overload5x offers its load through deploy/haproxy.cfg;
 * `haproxy-tls`: over TLS to that HAProxy terminating TLS itself; `caddy`: over TLS through
 * deploy/Caddyfile, then that HAProxy),
 * BENCH_PIN (1: generator on CPU 0, service on CPU 1; see bench/lib.ts), BENCH_DATABASE_URL (the
 * service's DATABASE_URL instead of a fresh SQLite file; with a local PostgreSQL the table adds
 * the PostgreSQL server processes' CPU per request), BENCH_ROUNDS (1: how many times the
 * closed-loop scenarios run, interleaved with the bare route; with more than one, a summary gives
 * each scenario's median ratio to the bare run of the same round). `apple-transaction`: StoreKit 2
 * transactions verified against a test App Store chain (bench/apple.ts): CPU per verified
 * transaction and transactions/s. `google-purchase`: Play Billing purchases submitted and asked of
 * a local Google (bench/google.ts): CPU per submission and submissions/s. Opt-in scenarios (only by
 * BENCH_ONLY): bare-presigned, least-create-order, least-enter-game, least-query-binding,
 * alipay-notify (Alipay async notifies, each RSA2-verified: CPU per verified notify),
 * wechat-callback (WeChat Pay's signed, encrypted payment callback of one order, replayed),
 * bare-matched (the bare route busy-waiting per request so that it answers as many requests a
 * second as create-order did in the same round: its p99 is what this machine gives a route of
 * create-order's throughput with no signature, database or group commit). BENCH_IDS (`sequential`,
 * default: reference and session ids in order, 5,000 players in turn; `random`: random ids and
 * players drawn at random from a million, as real clients often send them). The pay and
 * notifications scenario (`notifications` or `pay` in BENCH_ONLY; bench/notifications.ts) runs on
 * a service and fresh database of its own: BENCH_NOTIFICATIONS (backlog, 5000), BENCH_PAY_RATE
 * (1000/s) for BENCH_PAY_SECONDS (5), BENCH_POSTGRES_URL (also on a fresh database on that
 * PostgreSQL server, printed beside SQLite; defaults to BENCH_DATABASE_URL when PostgreSQL).
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ADMIN, cpuMs, createBenchGame, freePort, postgresCpuMs } from './lib.js';
import { notificationScenario, printNotificationFigures, type NotificationFigures } from './notifications.js';
import { benchAppleChain } from './apple.js';
import { benchGooglePlay } from './google.js';
import { printOverload, printOverload5x, runOverload, runOverload5x } from './overload.js';
import { requestCount, startBuiltService, startChild } from './run-load.js';
import { baselineScenarios, closedLoopScenarios, runRounds, selectScenarios, signedStreams, startBaseline, type Round } from './run-scenarios.js';
import { baselineDir, databaseUrl, duration, only, onPostgres, rounds } from './run-settings.js';
import { printBaselineComparison, printResultTable, printRoundSummary } from './run-summary.js';

/** The environment of the service under test (and of BENCH_BASELINE's) on `port`, its data in `dir`. */
function serviceEnvOf(appleRootDer: string, googleUrl: string): (port: number, dir: string) => Record<string, string> {
  return (port, dir) => ({
    APPLE_ROOT_CERTS: appleRootDer,
    GOOGLE_API_BASE_URL: googleUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dir,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ADMIN_TOKEN: ADMIN,
    // Request logs off, as the bare route logs nothing (BENCH_LOG_LEVEL=info to include them).
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'warn',
    NODE_ENV: 'development',
    // One load generator on one IP: the client API's per-IP limit would measure itself.
    CLIENT_RATE_LIMIT_PER_SECOND: '1000000',
    // ... and the per-address share of the in-progress places would bound its connections.
    MAX_INFLIGHT_PER_CLIENT_PERCENT: '100',
  });
}

async function main() {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-'));
  const children: ChildProcess[] = [];
  const servers: http.Server[] = [];
  const tempDirs: string[] = [];
  let stopGoogle = async () => {};
  try {
    // The service runs from the compiled build, as in production (`npm run bench` builds first).
    if (baselineDir && databaseUrl) throw new Error('BENCH_BASELINE runs both services on fresh SQLite files: unset BENCH_DATABASE_URL');
    const port = await freePort();
    const appleChain = benchAppleChain();
    const google = await benchGooglePlay();
    stopGoogle = () => google.close();
    const serviceEnv = serviceEnvOf(appleChain.rootDer, google.url);
    const svc = await startBuiltService(port, serviceEnv(port, dataDir));
    children.push(svc.child);
    const bare = await startChild(['bench/bare-server.ts'], {});
    children.push(bare.child);

    const game = `bench_${randomBytes(3).toString('hex')}`;
    const secret = await createBenchGame(svc.address, game);
    const n = requestCount(duration);
    const round: Round = { index: 0, results: [] };
    const streams = signedStreams(game, secret, round);
    const scenarios = await closedLoopScenarios({ svc, bare, game, secret, dataDir, appleChain, google, children, servers }, streams, round);
    const baseline = baselineDir ? await startBaseline(baselineDir, serviceEnv, game, tempDirs) : null;
    if (baseline) {
      children.push(baseline.child);
      servers.push(baseline.binding.gm);
      scenarios.push(...baselineScenarios(baseline, streams));
    }
    const byRound = await runRounds(selectScenarios(scenarios, baseline !== null), round);
    const over = !only || only.includes('overload') ? await runOverload(game, n, streams.orderBody, children, tempDirs) : null;
    const over5 = !only || only.includes('overload5x') ? await runOverload5x(game, n, streams.orderBody, children, tempDirs) : null;
    const notificationRuns = await notificationRunsOf(tempDirs);
    printResultTable(byRound);
    if (rounds > 1) printRoundSummary(byRound);
    if (baseline) printBaselineComparison(byRound);
    if (over) printOverload(over);
    if (over5) printOverload5x(over5);
    if (notificationRuns.length) printNotificationFigures(notificationRuns);
    if (notificationRuns.length === 1) console.log('(PostgreSQL beside it: BENCH_POSTGRES_URL=postgres://127.0.0.1:5432/postgres)');
  } finally {
    for (const srv of servers) srv.close();
    void stopGoogle();
    for (const c of children) c.kill('SIGTERM');
    rmSync(dataDir, { recursive: true, force: true });
    for (const d of tempDirs) rmSync(d, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

/** The pay and notifications scenario (`notifications` or `pay` in BENCH_ONLY) on SQLite, then on BENCH_POSTGRES_URL if set. */
async function notificationRunsOf(tempDirs: string[]): Promise<{ name: string; sqlite: boolean; f: NotificationFigures }[]> {
  const runs: { name: string; sqlite: boolean; f: NotificationFigures }[] = [];
  if (only && !only.includes('notifications') && !only.includes('pay')) return runs;
  const postgres = process.env.BENCH_POSTGRES_URL ?? (onPostgres ? databaseUrl : undefined);
  for (const target of [null, ...(postgres ? [postgres] : [])]) {
    process.stderr.write(`running pay and notifications on ${target ? 'PostgreSQL' : 'SQLite'}: paying orders, a local receiver answers 200...\n`);
    runs.push({ name: target ? 'PostgreSQL' : 'SQLite', sqlite: !target, f: await notificationsOn(target, tempDirs) });
  }
  return runs;
}

/** A fresh database named `bench_notify_<random>` on the PostgreSQL server at `postgresUrl`: its URL and how to drop it. */
async function freshPostgresDatabase(postgresUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const { default: pg } = await import('pg');
  const name = `bench_notify_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgresUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const u = new URL(postgresUrl);
  u.pathname = `/${name}`;
  return {
    url: u.href,
    drop: async () => {
      await admin.query(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

/**
 * The pay and notifications scenario (bench/notifications.ts) on a service of its own: a fresh
 * SQLite file, or (`postgresUrl`) a fresh database on that PostgreSQL server, dropped after.
 * BENCH_NOTIFICATIONS: orders in the backlog (default 5,000); BENCH_PAY_RATE: payments per
 * second of the latency phase (1,000), for BENCH_PAY_SECONDS (5).
 */
async function notificationsOn(postgresUrl: string | null, tempDirs: string[]): Promise<NotificationFigures> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-notify-'));
  tempDirs.push(dir);
  const db = postgresUrl ? await freshPostgresDatabase(postgresUrl) : null;
  const port = await freePort();
  const svc = await startBuiltService(port, {
    PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dir, ADMIN_TOKEN: ADMIN, LOG_LEVEL: 'warn', NODE_ENV: 'development',
    CLIENT_RATE_LIMIT_PER_SECOND: '1000000', MAX_INFLIGHT_PER_CLIENT_PERCENT: '100', ...(db ? { DATABASE_URL: db.url } : {}),
  });
  try {
    const game = `bench_ntf_${randomBytes(3).toString('hex')}`;
    return await notificationScenario({
      base: svc.address, game, secret: await createBenchGame(svc.address, game),
      count: Number(process.env.BENCH_NOTIFICATIONS ?? 5000),
      rate: Number(process.env.BENCH_PAY_RATE ?? 1000),
      seconds: Number(process.env.BENCH_PAY_SECONDS ?? 5),
      cpuMs: () => cpuMs(svc.child.pid),
      dbCpuMs: postgresUrl ? postgresCpuMs : undefined,
    });
  } finally {
    svc.child.kill('SIGTERM');
    await new Promise((r) => svc.child.once('exit', r));
    await db?.drop();
  }
}
