/**
 * `npm run bench:instructions`: instructions per request, counted by valgrind (callgrind), for
 * the bare route and the service's hot routes. Unlike req/s or CPU time, an instruction count
 * does not move with what else the machine (or the VM's host) is doing, so a change of a few
 * percent shows on a noisy 2-core VM where timing runs vary by ±50 % (docs/benchmarks.md,
 * "Instructions"). It counts user-space instructions only: the kernel's share of each request
 * (loopback TCP) is not in it, so it is a measure for A/B comparisons of our own code, not a
 * throughput figure.
 *
 * Each server runs under `valgrind --tool=callgrind --instr-atstart=no`, is warmed up with
 * INSTR_WARMUP requests (default 15000: with fewer, V8 is still optimising and the count keeps
 * falling), then counted over INSTR_REQUESTS requests (default 4000) between
 * `callgrind_control -i on` and `-i off`. Only the JavaScript thread is counted: V8's compiler
 * and GC helper threads vary from run to run. Repeated runs of one build differ by up to
 * ±10 %; one inline cache of Node's that an idle moment's collections upset is kept steady by
 * src/lib/tick-shape.ts (INSTR_IDLE_GC=1 loads bench/idle-gc.cjs into each server and signals
 * it halfway through the warm-up, bringing those collections on in every run). Compare builds
 * over alternated runs, or by one function's inclusive count (NODE_OPTIONS=--perf-basic-prof
 * names the JIT frames). INSTR_ONLY picks scenarios (bare, create-order, enter-game,
 * query-binding); INSTR_KEEP=1 keeps the callgrind files (for callgrind_annotate). Needs valgrind.
 * Valgrind does not offer the SHA extensions, so OpenSSL hashes with AVX2 under it: the signed
 * routes' SHA-256 counts for more than it costs outside valgrind on a CPU that has them.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { ADMIN, adminCall, bindingFixture, freePort, median, orderRequestBody, presigned, requestOptions, requestStream, signedGet, type RequestStream } from './lib.js';
import { authorizationHeader } from '../src/signing/signer.js';

const warmup = Number(process.env.INSTR_WARMUP ?? 15000);
const counted = Number(process.env.INSTR_REQUESTS ?? 4000);
const only = process.env.INSTR_ONLY?.split(',');
const idleGc = process.env.INSTR_IDLE_GC === '1';
/** Another checkout, built (`npm run build` there): its service is counted beside this one's. */
const baseline = process.env.INSTR_BASELINE ? path.resolve(process.env.INSTR_BASELINE) : undefined;
/** Counts of each build per scenario, alternated (this, baseline, baseline, this, ...). */
const repeats = Math.max(1, Number(process.env.INSTR_REPEATS ?? (baseline ? 2 : 1)));
/** The most a scenario may count above the baseline's (5 %). */
const BASELINE_LIMIT = 1.05;
const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-instr-'));
const here = process.cwd();

interface Counted {
  child: ChildProcess;
  /** The server's environment: valgrind names its control pipes after $HOST, so vgdb needs it too. */
  env: NodeJS.ProcessEnv;
  address: string;
  outFile: string;
}

async function startCounted(name: string, script: string[], env: Record<string, string>, port: number, cwd = here): Promise<Counted> {
  const outFile = path.join(dir, `${name}.callgrind`);
  const fullEnv = { ...process.env, ...env };
  const preload = idleGc ? ['--require', path.join(here, 'bench/idle-gc.cjs')] : [];
  const child = spawn('valgrind', ['--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', `--callgrind-out-file=${outFile}`, process.execPath, ...preload, ...script], {
    cwd,
    env: fullEnv,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.resume();
  const address = `http://127.0.0.1:${port}`;
  await listening(address, child);
  return { child, env: fullEnv, address, outFile };
}

/** Resolves once the server answers anything (startup under valgrind takes a while). */
async function listening(address: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 600_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      await fetch(`${address}/readyz`);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error('server did not start');
}

/**
 * The warm-up: `drive(half)`, then (INSTR_IDLE_GC=1) the idle collections of bench/idle-gc.cjs,
 * then `drive(rest)`, so that V8 has re-optimised what they threw away before counting starts.
 */
async function warmUp(c: Counted, drive: (n: number) => Promise<void>): Promise<void> {
  const half = Math.floor(warmup / 2);
  await drive(half);
  if (idleGc) c.child.kill('SIGUSR2');
  await drive(warmup - half);
}

/** Instructions callgrind counted while `fn` ran (its requests): total Ir of the dump. */
async function countDuring(c: Counted, fn: () => Promise<void>): Promise<number> {
  execFileSync('callgrind_control', ['-i', 'on', String(c.child.pid)], { stdio: 'ignore', env: c.env });
  await fn();
  execFileSync('callgrind_control', ['-i', 'off', String(c.child.pid)], { stdio: 'ignore', env: c.env });
  const exited = new Promise((r) => c.child.once('exit', r));
  c.child.kill('SIGTERM');
  await exited;
  // The dump at exit holds what was counted while instrumentation was on; thread 1 is the
  // JavaScript thread (V8's compiler and GC helpers, counted apart, vary from run to run).
  const text = readFileSync(`${c.outFile}-01`, 'utf8');
  const m = /^totals: (\d+)/m.exec(text);
  if (!m) throw new Error(`no totals in ${c.outFile}`);
  return Number(m[1]);
}

async function drive(url: string, amount: number, source?: RequestStream, body?: string): Promise<void> {
  const r = await autocannon({
    url,
    connections: 16,
    amount,
    timeout: 120,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    ...requestOptions(source),
  });
  if (r.non2xx || r.errors) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors: ${JSON.stringify((r as unknown as { statusCodeStats?: unknown }).statusCodeStats)}`);
}

async function main(): Promise<void> {
  const rows: [string, number][] = [];
  const wanted = (s: string) => !only || only.includes(s);
  const run = randomBytes(4).toString('hex');
  const orderBody = (i: number) => orderRequestBody(`instr-${run}-${i}`, i);

  if (wanted('bare')) {
    const port = await freePort();
    const bare = await startCounted('bare', ['--import', 'tsx', 'bench/bare-server.ts'], { BARE_PORT: String(port) }, port);
    await warmUp(bare, (n) => drive(`${bare.address}/bare`, n, undefined, orderBody(0)));
    rows.push(['bare fastify route', await countDuring(bare, () => drive(`${bare.address}/bare`, counted, undefined, orderBody(0)))]);
  }

  const builds: [string, string][] = baseline ? [['', here], [' (baseline)', baseline]] : [['', here]];
  const counts = new Map<string, number[]>();
  for (const scenario of ['create-order', 'enter-game', 'query-binding']) {
    if (!wanted(scenario)) continue;
    for (let r = 0; r < repeats; r++) {
      // Alternated, so that a drift of the machine during the run weighs on both builds alike.
      for (const [label, root] of r % 2 === 0 ? builds : [...builds].reverse()) {
        const name = `${scenario}${label}`;
        counts.set(name, [...(counts.get(name) ?? []), await countScenario(scenario, `${name.replace(/\W+/g, '-').replace(/-$/, '')}-${r}`, root, orderBody)]);
      }
    }
  }
  for (const [name, list] of counts) rows.push([name, median(list)]);

  const bare = rows.find(([n]) => n.startsWith('bare'))?.[1];
  console.log(`\n${new Date().toISOString()}  ${os.cpus()[0]?.model ?? '?'}, node ${process.version}, ${warmup} warm-up + ${counted} counted requests\n`);
  console.log('| scenario | instructions per request | ratio of bare to it |\n|---|---|---|');
  for (const [name, ir] of rows) {
    const per = Math.round(ir / counted);
    console.log(`| ${name} | ${per.toLocaleString('en-US')} | ${bare ? (bare / ir).toFixed(2) : '-'} |`);
  }
  if (baseline) compareToBaseline(counts);
}

/**
 * Instructions per request of one scenario on one build (the checkout at `root`), counted in a
 * service of its own on a fresh database.
 */
async function countScenario(scenario: string, label: string, root: string, orderBody: (i: number) => string): Promise<number> {
  const run = randomBytes(4).toString('hex');
  const port = await freePort();
  const svc = await startCounted(label, ['dist/src/main.js'], {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: path.join(dir, label),
    ADMIN_TOKEN: ADMIN,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'development',
    // Under valgrind the event loop is slow by design: no shedding for its lag.
    MAX_EVENT_LOOP_DELAY_MS: '0',
    // The background pollers (notifications, expiry sweeps, NPPA uploads) tick once a second of
    // wall time. Under valgrind a second holds ~70 requests instead of thousands, so their
    // ticks would add a large share to every request's count, and vary with valgrind's speed.
    // They are not per-request work: they tick once a minute or less here.
    NOTIFY_POLL_INTERVAL_MS: '60000',
    NPPA_POLL_INTERVAL_MS: '60000',
    SWEEP_INTERVAL_MS: '600000',
  }, port, root);
  const game = `instr_${randomBytes(3).toString('hex')}`;
  const { secret_key: secret } = await adminCall(svc.address, 'POST', '/admin/v1/games', { game_id: game, name: 'Instr', rate_limit_per_second: 1_000_000 });
  await adminCall(svc.address, 'PUT', `/admin/v1/games/${game}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY' });
  let phase = 0;
  let setup: RequestStream;
  if (scenario === 'query-binding') setup = await bindingSetup(svc.address, game, secret);
  const stream = (n: number) => {
    const p = phase++;
    if (scenario === 'create-order') return presigned(n, (i) => ({ path: '/v1/server/create-order', body: orderBody(p * 1_000_000 + i) }), game, secret);
    if (scenario === 'enter-game') return presigned(n, (i) => ({ path: '/v1/server/enter-game', body: JSON.stringify({ combo_id: `player${i % 5000}`, session_id: `s-${run}-${p}-${i}` }) }), game, secret);
    return setup;
  };
  const warm = stream(warmup);
  await warmUp(svc, (n) => drive(svc.address, n, warm));
  const next = stream(counted);
  return countDuring(svc, () => drive(svc.address, counted, next));
}

/** Each scenario's median count against the baseline's, PASS within BASELINE_LIMIT. */
function compareToBaseline(counts: Map<string, number[]>): void {
  console.log(`\nthis build against INSTR_BASELINE (${baseline}), ${repeats} counts each, medians:\n`);
  console.log('| scenario | this build | baseline | ratio |\n|---|---|---|---|');
  const checks: string[] = [];
  for (const [name, list] of counts) {
    const base = counts.get(`${name} (baseline)`);
    if (!base) continue;
    const ratio = median(list) / median(base);
    const per = (n: number[]) => n.map((x) => Math.round(x / counted).toLocaleString('en-US')).join(', ');
    console.log(`| ${name} | ${per(list)} | ${per(base)} | ${ratio.toFixed(3)} |`);
    checks.push(`${ratio <= BASELINE_LIMIT ? 'PASS' : 'FAIL'}  ${name}: at most ${Math.round((BASELINE_LIMIT - 1) * 100)} % more instructions per request than the baseline (${((ratio - 1) * 100).toFixed(1)} %)`);
  }
  for (const line of checks) console.log(line);
}

/** query-binding on a warm role cache (bench/lib.ts), signed once: a run lasts well under the 300 s a signature is valid. */
async function bindingSetup(address: string, game: string, secret: string) {
  const { gm, partnerId, partnerSecret, uri } = await bindingFixture(address, game, secret);
  gm.unref();
  const auth = authorizationHeader({ kind: 'partner', id: partnerId }, partnerSecret, 'GET', uri, '');
  const request = signedGet(uri, auth);
  return requestStream(() => request);
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => process.env.INSTR_KEEP || rmSync(dir, { recursive: true, force: true }));
