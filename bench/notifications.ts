/**
 * The pay and notifications scenarios of `npm run bench`, on a service of their own (a fresh
 * database) with one game whose notify_url is a local receiver answering 200 at once:
 *  1. orders are created (not measured), then paid by 64 clients while the receiver holds its
 *     answers: pay/s, and a backlog of ship_orders builds up;
 *  2. the receiver answers everything: deliveries/s from that moment to the last receipt;
 *     server CPU per paid-and-delivered order over phases 1 and 2 (pay and deliver, not create);
 *  3. payments at a fixed rate (open loop, 1,000/s): paid-to-received latency, each ship_order's
 *     receipt timed from its pay answer.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { Agent, request } from 'undici';
import { authorizationHeader } from '../src/signing/signer.js';

export interface NotificationFigures {
  createdPerSecond: number;
  paid: number;
  payPerSecond: number;
  delivered: number;
  deliveriesPerSecond: number;
  /** Service CPU (user+sys) per order over paying and delivering the backlog. */
  cpuUsPerOrder: number;
  /** Of it, while the orders were paid (the receiver holding its answers). */
  payCpuUsPerOrder: number;
  /** The same for the local PostgreSQL's server processes, when the service runs on it. */
  dbCpuUsPerOrder?: number;
  rate: number;
  /** Payments answered per second in phase 3 (the rate achieved). */
  achievedRate: number;
  p50: number;
  p99: number;
  /** Of phase 3's payments, how many ship_orders came within the wait. */
  received: number;
  /** Requests the service shed (503) and the scenario sent again. */
  shed: number;
}

export interface NotificationRun {
  base: string;
  game: string;
  secret: string;
  /** Orders in the backlog (phases 1 and 2). */
  count: number;
  /** Phase 3: payments per second, for `seconds`. */
  rate: number;
  seconds: number;
  cpuMs: () => number;
  dbCpuMs?: () => number;
}

/** The targets (issue 48): deliveries/s, pay/s, paid-to-received p50 ms, CPU µs per order on SQLite. */
export const NOTIFY_TARGETS = { deliveriesPerSecond: 2000, payPerSecond: 2000, p50Ms: 50, cpuUsPerOrder: 600 };

export async function notificationScenario(o: NotificationRun): Promise<NotificationFigures> {
  const received = new Map<string, number>();
  const held: { res: http.ServerResponse; orderId: string }[] = [];
  let holding = true;
  let waiter: { n: number; resolve: () => void } | null = null;
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const orderId = JSON.parse(Buffer.concat(chunks).toString('utf8')).data.order_id as string;
      if (holding) return void held.push({ res, orderId });
      received.set(orderId, performance.now());
      res.writeHead(200).end('OK');
      if (waiter && received.size >= waiter.n) waiter.resolve();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const until = (n: number, ms: number) =>
    Promise.race([new Promise<void>((resolve) => (received.size >= n ? resolve() : (waiter = { n, resolve }))), new Promise((r) => setTimeout(r, ms))]);
  const notifyUrl = `http://127.0.0.1:${(receiver.address() as net.AddressInfo).port}/notify`;
  const agent = new Agent({ connections: 64, pipelining: 1 });
  /** Shed requests (503, the service over capacity) are sent again, as a client would. */
  let shed = 0;
  const post = async (p: string, body: string, headers: Record<string, string> = {}): Promise<Record<string, any>> => {
    for (;;) {
      const r = await request(o.base + p, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers }, dispatcher: agent });
      const answer = (await r.body.json()) as Record<string, any>;
      if (r.statusCode !== 503) return answer;
      shed++;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };
  const run = randomBytes(4).toString('hex');
  const create = async (i: number) => {
    const body = JSON.stringify({ reference_id: `ntf-${run}-${i}`, combo_id: `n${i % 5000}`, product_id: 'gem_60', platform: 'ios', notify_url: notifyUrl });
    const r = await post('/v1/server/create-order', body, { authorization: authorizationHeader({ kind: 'game', id: o.game }, o.secret, 'POST', '/v1/server/create-order', body) });
    return { orderId: r.order_id as string, token: r.order_token as string };
  };
  const paidAt = new Map<string, number>();
  const pay = async (order: { orderId: string; token: string }) => {
    const p = await post('/v1/client/pay', JSON.stringify({ order_token: order.token, channel: 'sandbox' }));
    if (p.status !== 'paid' && p.status !== 'delivered') throw new Error(`pay answered ${JSON.stringify(p)}`);
    paidAt.set(order.orderId, performance.now());
  };
  /** `fn` over 0..n-1 by `clients` concurrent callers. */
  const closedLoop = async <T>(n: number, clients: number, fn: (i: number) => Promise<T>): Promise<T[]> => {
    const out = new Array<T>(n);
    let next = 0;
    await Promise.all(Array.from({ length: clients }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await fn(i);
      }
    }));
    return out;
  };
  try {
    const latencyCount = o.rate * o.seconds;
    let t = performance.now();
    const orders = await closedLoop(o.count + latencyCount, 64, create);
    const createdPerSecond = Math.round((o.count + latencyCount) / ((performance.now() - t) / 1000));

    const cpu0 = o.cpuMs();
    const db0 = o.dbCpuMs?.() ?? 0;
    t = performance.now();
    await closedLoop(o.count, 64, (i) => pay(orders[i]!));
    const payPerSecond = Math.round(o.count / ((performance.now() - t) / 1000));
    const payCpuUsPerOrder = Math.round(((o.cpuMs() - cpu0) * 1000) / o.count);
    // The backlog is in the database (or claimed and waiting at the receiver): answer it all.
    const release = performance.now();
    holding = false;
    for (const h of held.splice(0)) {
      received.set(h.orderId, performance.now());
      h.res.writeHead(200).end('OK');
    }
    await until(o.count, 120_000);
    const delivered = received.size;
    const last = Math.max(...received.values());
    const deliveriesPerSecond = Math.round(delivered / ((last - release) / 1000));
    // Recording the last attempts (their commits) is part of delivering: let it settle.
    await new Promise((r) => setTimeout(r, 200));
    const cpuUsPerOrder = Math.round(((o.cpuMs() - cpu0) * 1000) / o.count);
    const dbCpuUsPerOrder = o.dbCpuMs ? Math.round(((o.dbCpuMs() - db0) * 1000) / o.count) : undefined;

    // Phase 3: open loop, each payment sent at its scheduled time whatever the earlier ones do.
    paidAt.clear();
    const started = performance.now();
    const inflight: Promise<void>[] = [];
    let sent = 0;
    while (sent < latencyCount) {
      const due = Math.min(latencyCount, Math.floor(((performance.now() - started) / 1000) * o.rate) + 1);
      while (sent < due) inflight.push(pay(orders[o.count + sent++]!));
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(inflight);
    const achievedRate = Math.round(latencyCount / ((performance.now() - started) / 1000));
    await until(o.count + latencyCount, 30_000);
    const lat = [...paidAt].filter(([id]) => received.has(id)).map(([id, at]) => Math.max(0, received.get(id)! - at)).sort((a, b) => a - b);
    const q = (p: number) => Math.round((lat[Math.min(lat.length - 1, Math.floor(lat.length * p))] ?? NaN) * 10) / 10;
    return {
      createdPerSecond, paid: o.count, payPerSecond, delivered, deliveriesPerSecond, cpuUsPerOrder, payCpuUsPerOrder, dbCpuUsPerOrder,
      rate: o.rate, achievedRate, p50: q(0.5), p99: q(0.99), received: lat.length, shed,
    };
  } finally {
    for (const h of held) h.res.destroy();
    receiver.close();
    await agent.close();
  }
}

/** The scenario's figures side by side per database, with PASS/FAIL per target. */
export function printNotificationFigures(byDatabase: { name: string; sqlite: boolean; f: NotificationFigures }[]): void {
  const cols = byDatabase.map((d) => d.name);
  console.log(`\n| pay and notifications (one game, its host answering at once) | ${cols.join(' | ')} |`);
  console.log(`|---|${cols.map(() => '---').join('|')}|`);
  const row = (label: string, cell: (f: NotificationFigures) => string) => console.log(`| ${label} | ${byDatabase.map((d) => cell(d.f)).join(' | ')} |`);
  row('orders created/s (set-up, not a target)', (f) => String(f.createdPerSecond));
  row('pay/s (64 clients)', (f) => String(f.payPerSecond));
  row('backlog delivered', (f) => String(f.delivered));
  row('deliveries/s (backlog drain)', (f) => String(f.deliveriesPerSecond));
  row('server CPU µs per paid-and-delivered order (of which while paying)', (f) => `${f.cpuUsPerOrder} (${f.payCpuUsPerOrder})`);
  if (byDatabase.some((d) => d.f.dbCpuUsPerOrder !== undefined)) row('PostgreSQL CPU µs per order', (f) => String(f.dbCpuUsPerOrder ?? '-'));
  row('open-loop payments/s: asked, achieved', (f) => `${f.rate}, ${f.achievedRate}`);
  row('paid-to-received p50 ms, p99 ms (received)', (f) => `${f.p50}, ${f.p99} (${f.received})`);
  row('requests shed (503) and sent again', (f) => String(f.shed));
  const t = NOTIFY_TARGETS;
  for (const d of byDatabase) {
    const f = d.f;
    const checks: [string, boolean][] = [
      [`deliveries/s ${f.deliveriesPerSecond} >= ${t.deliveriesPerSecond}`, f.deliveriesPerSecond >= t.deliveriesPerSecond && f.delivered === f.paid],
      [`pay/s ${f.payPerSecond} >= ${t.payPerSecond}`, f.payPerSecond >= t.payPerSecond],
      [`paid-to-received p50 ${f.p50} ms <= ${t.p50Ms} ms at ${f.rate} payments/s`, f.p50 <= t.p50Ms && f.achievedRate >= f.rate * 0.9],
    ];
    if (d.sqlite) checks.push([`server CPU ${f.cpuUsPerOrder} µs per paid-and-delivered order <= ${t.cpuUsPerOrder} µs`, f.cpuUsPerOrder <= t.cpuUsPerOrder]);
    for (const [what, pass] of checks) console.log(`${pass ? 'PASS' : 'FAIL'}  ${d.name}: ${what}`);
  }
}
