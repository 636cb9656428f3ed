/**
 * The closed-loop scenarios of `npm run bench` (bench/run.ts): each loads one route with
 * autocannon at BENCH_CONNECTIONS, once unrecorded (BENCH_WARMUP), then in each of BENCH_ROUNDS
 * rounds, interleaved with the bare route.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomInt } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import type http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { authorizationHeader } from '../src/signing/signer.js';
import { WechatPayStandIn } from '../test/helpers/wechatpay.js';
import type { AppleChain } from '../test/helpers/apple.js';
import type { GooglePlayStandIn } from '../test/helpers/google-play.js';
import { alipayNotifyStream } from './alipay-notify.js';
import { appleTransactions } from './apple.js';
import { googlePurchases } from './google.js';
import { bindingFixture, createBenchGame, freePort, orderRequestBody, presigned, requestStream, signedGet, wechatPaidOrderSetup, type BindingFixture, type RequestStream } from './lib.js';
import { httpPost } from './open-loop.js';
import { load, requestCount, startBuiltService, startChild, type Result, type Started } from './run-load.js';
import { BASELINE_LABEL, BASELINE_SCENARIOS, duration, connections, ids, only, rounds, warmup } from './run-settings.js';
import { BARE, BARE_MATCHED } from './run-summary.js';

export interface Scenario {
  name: string;
  go: (seconds: number) => Promise<Result>;
}

/**
 * The round in progress (-1: the warm-up) and its results so far (bare-matched reads
 * create-order's and bare's).
 */
export interface Round {
  index: number;
  results: Result[];
}

/** The request bodies and pre-signed request streams of the scenarios, sized for a run of `seconds`. */
export interface Streams {
  orderBody: (i: number) => string;
  createOrders: (seconds: number, key?: string) => RequestStream;
  enterGames: (seconds: number, key?: string) => RequestStream;
}

/** What the closed-loop scenarios run against: the service and its game, the bare route, the stand-ins. */
export interface Targets {
  svc: Started;
  bare: Started;
  game: string;
  secret: string;
  dataDir: string;
  appleChain: AppleChain;
  google: GooglePlayStandIn;
  /** Where the scenarios leave what they start, to stop at the end. */
  children: ChildProcess[];
  servers: http.Server[];
}

/** One of a million players, at random. */
function randomPlayer(): string {
  return `player${randomInt(1_000_000)}`;
}

/** The streams of `game`, signed with its `secret` unless another key is given. */
export function signedStreams(game: string, secret: string, round: Round): Streams {
  const run = randomBytes(4).toString('hex');
  // Every round sends new ids: a repeated reference_id would measure idempotent replays.
  const orderBody = (i: number) =>
    ids === 'random' ? orderRequestBody(`bench-${randomBytes(12).toString('hex')}`, i, randomPlayer()) : orderRequestBody(`bench-${run}-${round.index}-${i}`, i);
  const sessionBody = (i: number) =>
    ids === 'random'
      ? { combo_id: randomPlayer(), session_id: randomBytes(16).toString('hex') }
      : { combo_id: `player${i % 5000}`, session_id: `s-${run}-${round.index}-${i}` };
  return {
    orderBody,
    createOrders: (seconds, key = secret) => presigned(requestCount(seconds), (i) => ({ path: '/v1/server/create-order', body: orderBody(i) }), game, key),
    enterGames: (seconds, key = secret) =>
      presigned(requestCount(seconds), (i) => ({ path: '/v1/server/enter-game', body: JSON.stringify(sessionBody(i)) }), game, key),
  };
}

/**
 * One partner-signed GET, serialised once and re-signed once a minute (signatures are valid for
 * 300 s): like the bare route's static request, it costs the generator nothing per request.
 */
function partnerGet(uri: string, partner: string, secret: string): RequestStream {
  let signedAt = 0;
  let request: Buffer = Buffer.alloc(0);
  return requestStream(() => {
    const now = Date.now();
    if (now - signedAt > 60_000) {
      const auth = authorizationHeader({ kind: 'partner', id: partner }, secret, 'GET', uri, '', now);
      request = signedGet(uri, auth);
      signedAt = now;
    }
    return request;
  });
}

/** Every scenario of this build, in the order they run: the defaults, then the opt-in ones. */
export async function closedLoopScenarios(t: Targets, s: Streams, round: Round): Promise<Scenario[]> {
  const { svc, bare, game, secret } = t;
  const scenarios: Scenario[] = [
    { name: 'bare', go: (d) => load(BARE, bare.child.pid, `${bare.address}/bare`, d, undefined, s.orderBody(0)) },
    {
      name: 'create-order',
      go: (d) => load('create-order', svc.child.pid, svc.address, d, s.createOrders(d)),
    },
    {
      name: 'enter-game',
      go: (d) => load('enter-game', svc.child.pid, svc.address, d, s.enterGames(d)),
    },
  ];

  // query-binding on a warm role cache: a local GM answers ListRoles; one binding.
  const binding = await bindingFixture(svc.address, game, secret);
  t.servers.push(binding.gm);
  const { partnerId, partnerSecret, uri: queryUri } = binding;
  scenarios.push({ name: 'query-binding', go: (d) => load('query-binding (warm cache)', svc.child.pid, svc.address, d, partnerGet(queryUri, partnerId, partnerSecret)) });
  scenarios.push(...paymentScenarios(t, binding));
  scenarios.push(...referenceScenarios(t, s, binding, round));
  scenarios.push(...callbackScenarios(t));
  return scenarios;
}

/** apple-transaction and google-purchase: purchases verified against the local App Store and Google. */
function paymentScenarios(t: Targets, binding: BindingFixture): Scenario[] {
  const { svc, game, secret } = t;
  const notifyUrl = () => `http://127.0.0.1:${(binding.gm.address() as net.AddressInfo).port}/notify`;
  // StoreKit 2 transactions verified against APPLE_ROOT_CERTS (payments.md 3): 500 orders
  // paid, then the same transactions again; CPU per verified transaction, transactions/s.
  let appleStream: Promise<RequestStream> | null = null;
  // Play Billing purchases (payments.md 3) against a local Google (bench/google.ts): 500
  // orders paid and consumed, then the same purchases again; CPU per submission, submissions/s.
  let googleStream: Promise<RequestStream> | null = null;
  return [
    {
      name: 'apple-transaction',
      go: async (d) => load('apple-transaction (verified)', svc.child.pid, svc.address, d, await (appleStream ??= appleTransactions(svc.address, game, secret, t.appleChain, 500, notifyUrl()))),
    },
    {
      name: 'google-purchase',
      go: async (d) => load('google-purchase (asked of Google)', svc.child.pid, svc.address, d, await (googleStream ??= googlePurchases(svc.address, game, secret, t.google, 500, notifyUrl()))),
    },
  ];
}

/**
 * Opt-in references (BENCH_ONLY): the bare route loaded with the same stream of unique
 * pre-signed requests as the service, and the least work each route needs
 * (bench/least-work-server.ts), started on first use; then bare-matched.
 */
function referenceScenarios(t: Targets, s: Streams, binding: BindingFixture, round: Round): Scenario[] {
  const { bare, game, secret } = t;
  const { partnerId, partnerSecret, uri: queryUri } = binding;
  let least: Promise<Started> | null = null;
  const leastServer = () =>
    (least ??= startChild(['bench/least-work-server.ts'], {
      LEAST_DB: path.join(t.dataDir, 'least-work.db'),
      LEAST_GAME_SECRET: secret,
      LEAST_PARTNER_SECRET: partnerSecret,
      LEAST_BINDING: [game, partnerId, 'u1', 'player1', 'r1'].join(','),
    }).then((l) => (t.children.push(l.child), l)));
  const leastLoad = async (name: string, setup: RequestStream, seconds: number) => {
    const l = await leastServer();
    return load(name, l.child.pid, l.address, seconds, setup);
  };
  return [
    {
      name: 'bare-presigned',
      go: (d) => load('bare route, unique pre-signed requests', bare.child.pid, `${bare.address}/bare`, d, presigned(requestCount(d), (i) => ({ path: '/bare', body: s.orderBody(i) }), game, secret)),
    },
    { name: 'least-create-order', go: (d) => leastLoad('least work: create-order', s.createOrders(d), d) },
    {
      name: 'least-enter-game',
      go: (d) => leastLoad('least work: enter-game', s.enterGames(d), d),
    },
    { name: 'least-query-binding', go: (d) => leastLoad('least work: query-binding', partnerGet(queryUri, partnerId, partnerSecret), d) },
    { name: 'bare-matched', go: (d) => bareMatched(bare, s.orderBody(0), round, d) },
  ];
}

/**
 * The bare route at create-order's throughput: it busy-waits per request so that it answers
 * as many requests a second as create-order did in this round (both must run before it in
 * the round; in the warm-up, with no figures yet, it does not spin). At 64 closed-loop
 * connections the throughput fixes the mean latency, so the two p99s compare the tails alone.
 */
async function bareMatched(bare: Started, body: string, round: Round, seconds: number): Promise<Result> {
  const bareRun = round.results.find((r) => r.name === BARE);
  const order = round.results.find((r) => r.name === 'create-order');
  if (!bareRun || !order) return load(BARE_MATCHED, bare.child.pid, `${bare.address}/bare`, seconds, undefined, body);
  // A first guess from the CPU figures, then one unrecorded 3 s trial corrects it by the
  // difference in time per request (the route is CPU-bound, so 1/req/s is its time per request).
  const url = (spin: number) => `${bare.address}/bare?spin_us=${Math.max(0, Math.round(spin))}`;
  const guess = order.cpuUsPerReq - bareRun.cpuUsPerReq;
  const trial = await load(BARE_MATCHED, bare.child.pid, url(guess), 3, undefined, body);
  return load(BARE_MATCHED, bare.child.pid, url(guess + 1e6 / order.rps - 1e6 / trial.rps), seconds, undefined, body);
}

/** alipay-notify and wechat-callback (opt-in): the payment providers' signed callbacks. */
function callbackScenarios(t: Targets): Scenario[] {
  const { svc, game, secret } = t;
  // Alipay's async notify (opt-in): a form post whose RSA2 signature is verified with the
  // game's alipay_public_key; WAIT_BUYER_PAY, so each request is the verification alone.
  let notifies: Promise<RequestStream> | null = null;
  // WeChat Pay's payment callback of one paid order, sent again and again: the CPU of a
  // verified (RSA-SHA256) and decrypted (AES-256-GCM) callback and its idempotent replay.
  let wechatOrder: Promise<string> | null = null;
  const wx = new WechatPayStandIn();
  return [
    {
      name: 'alipay-notify',
      go: async (d) => load('alipay-notify (verified, WAIT_BUYER_PAY)', svc.child.pid, svc.address, d, await (notifies ??= alipayNotifyStream(svc.address, game))),
    },
    {
      name: 'wechat-callback',
      go: async (d) => {
        wechatOrder ??= wechatPaidOrderSetup(svc.address, game, secret, wx);
        const orderId = await wechatOrder;
        const { body, headers } = wx.callbackRequest('TRANSACTION.SUCCESS', {
          appid: wx.appid, mchid: wx.mchid, out_trade_no: orderId, transaction_id: `4200${orderId}`, trade_type: 'NATIVE', trade_state: 'SUCCESS', amount: { total: 600, currency: 'CNY', payer_total: 600, payer_currency: 'CNY' },
        });
        const request = httpPost(`/v1/callbacks/wechat/${game}`, body, { connection: 'keep-alive', ...headers });
        return load('wechat-callback (verify, decrypt, replay)', svc.child.pid, svc.address, d, requestStream(() => request));
      },
    },
  ];
}

/** BENCH_BASELINE's service, with its game and binding. */
export interface Baseline extends Started {
  secret: string;
  binding: BindingFixture;
}

/**
 * The service of another checkout (BENCH_BASELINE), built there, on a fresh SQLite file, with
 * the same game, product and binding as this build's.
 */
export async function startBaseline(dir: string, serviceEnv: (port: number, dataDir: string) => Record<string, string>, game: string, tempDirs: string[]): Promise<Baseline> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-baseline-'));
  tempDirs.push(dataDir);
  const { child, address } = await startBuiltService(port, serviceEnv(port, dataDir), dir);
  const secret = await createBenchGame(address, game);
  const binding = await bindingFixture(address, game, secret);
  return { child, address, secret, binding };
}

/** The baseline's scenarios: `<name>-baseline` runs `<name>` on the baseline's service. */
export function baselineScenarios(baseline: Baseline, s: Streams): Scenario[] {
  const { child, address, secret: key, binding } = baseline;
  return [
    { name: 'create-order-baseline', go: (d) => load(`create-order${BASELINE_LABEL}`, child.pid, address, d, s.createOrders(d, key)) },
    { name: 'enter-game-baseline', go: (d) => load(`enter-game${BASELINE_LABEL}`, child.pid, address, d, s.enterGames(d, key)) },
    { name: 'query-binding-baseline', go: (d) => load(`query-binding (warm cache)${BASELINE_LABEL}`, child.pid, address, d, partnerGet(binding.uri, binding.partnerId, binding.partnerSecret)) },
  ];
}

/** The scenarios only BENCH_ONLY runs. */
const OPT_IN = new Set(['bare-presigned', 'least-create-order', 'least-enter-game', 'least-query-binding', 'bare-matched', 'wechat-callback', 'alipay-notify']);

/** The scenarios this run runs (BENCH_ONLY, or all but the opt-in ones), in order. */
export function selectScenarios(scenarios: Scenario[], withBaseline: boolean): Scenario[] {
  // With a baseline, each of its scenarios runs right after the same scenario of this build.
  const selected = scenarios
    .filter((s) => (only ? only.includes(s.name) : !OPT_IN.has(s.name)) && !s.name.endsWith('-baseline'))
    .flatMap((s) => [s, ...scenarios.filter((b) => withBaseline && BASELINE_SCENARIOS.includes(s.name) && b.name === `${s.name}-baseline`)]);
  if (only?.includes('bare-matched') && !(only.includes('bare') && only.includes('create-order'))) {
    throw new Error('bare-matched takes its rate from the same round: add bare and create-order to BENCH_ONLY');
  }
  return selected;
}

/** Runs `selected`: the warm-up, then BENCH_ROUNDS rounds; the results of each round. */
export async function runRounds(selected: Scenario[], round: Round): Promise<Result[][]> {
  const byRound: Result[][] = [];
  // Unrecorded: each scenario once before round 1, so that no round measures code Node has not
  // yet optimised (a cold first round showed a higher p99 on every route, the bare one too).
  round.index = -1;
  for (const s of warmup > 0 ? selected : []) {
    process.stderr.write(`warming up ${s.name} for ${warmup}s (not recorded)...\n`);
    await s.go(warmup);
  }
  for (round.index = 0; round.index < rounds; round.index++) {
    round.results = [];
    for (const s of selected) {
      process.stderr.write(`${rounds > 1 ? `round ${round.index + 1}/${rounds}: ` : ''}running ${s.name} for ${duration}s at ${connections} connections...\n`);
      round.results.push(await s.go(duration));
    }
    byRound.push(round.results);
  }
  return byRound;
}
