/**
 * `npm run bench:sqlite-writes`: create-order without HTTP, in process, on a fresh SQLite file:
 * the real OrderService and OrderStore through the real group commit (`Database.transaction`:
 * idempotency probe, order row), 64 orders in flight, as the service runs them. Prints the
 * process CPU and the event loop's busy time per order for the journal settings compared, `temp_store = MEMORY` (the
 * service's) and `FILE` (SQLite's default), and, with the service's setting, with each index of
 * the orders table dropped in turn: what each index costs a new order. The service's player
 * index worker (db/player-index.ts) runs as in the service, and the CPU it takes to index the
 * orders is counted (process.cpuUsage counts every thread; a last pass is awaited); one run has
 * the player key in the orders table instead, as an index (game_id, combo_id, created_at,
 * order_id), without the worker.
 *
 * Settings: BENCH_ORDERS (40,000 per setting), BENCH_ROUNDS (3, alternated).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase } from '../src/db/index.js';
import type { GameSnapshot } from '../src/games/service.js';
import { systemClock } from '../src/lib/clock.js';
import { IdGenerator } from '../src/lib/ids.js';
import type { CreateOrderBody } from '../src/orders/schemas.js';
import { OrderService } from '../src/orders/service.js';
import { OrderStore } from '../src/orders/store.js';
import { median } from './lib.js';

const ORDERS = Number(process.env.BENCH_ORDERS ?? 40_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IN_FLIGHT = 64;

// What the service hands OrderService.create: the game's snapshot (only the parts create-order
// reads) and a validated body.
const snapshot = {
  game: { game_id: 'game_bench', order_ttl_seconds: 900, iap_enabled: 1 },
  products: new Map([['gem60', { price: 600, currency: 'CNY', active: 1 }]]),
} as unknown as GameSnapshot;

function body(i: number): CreateOrderBody {
  return {
    reference_id: `ref-${randomBytes(8).toString('hex')}`,
    combo_id: `combo_${i % 5000}`,
    product_id: 'gem60',
    platform: 'ios',
    notify_url: 'http://127.0.0.1:9/notify',
    meta: { zone_id: 'z1', server_id: 's1', role_id: 'r1', role_name: 'name', role_level: 10 },
  };
}

/** The secondary indexes of the orders table (not the primary key's or the unique constraint's). */
const ORDER_INDEXES = ['orders_status_expires', 'orders_game_created_at', 'orders_game_status_created'];

/** The player key as an index of the orders table, where the player index worker keeps it instead. */
const PLAYER_KEY_IN_TABLE = 'create index orders_player_in_table on orders (game_id, combo_id, created_at, order_id)';

/** What a run costs per order: the process's CPU (every thread), and the event loop's busy time. */
interface Cost {
  cpu: number;
  loop: number;
}

/**
 * CPU µs per order for `ORDERS` orders created on a fresh file with the given temp_store, and
 * without the index `without` if given; `playerKeyInTable`: with the player key as an index of
 * the table, and no player index worker.
 */
async function run(tempStore: 'MEMORY' | 'FILE', without?: string, playerKeyInTable = false): Promise<Cost> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-writes-'));
  const database = openDatabase(`sqlite:${path.join(dir, 'bench.db')}`);
  try {
    await migrateToLatest(database);
    await sql.raw(`pragma temp_store = ${tempStore}`).execute(database.db);
    if (without) await sql.raw(`drop index ${without}`).execute(database.db);
    if (playerKeyInTable) await sql.raw(PLAYER_KEY_IN_TABLE).execute(database.db);
    // Started (and its first pass run) before the count: its thread's start is not an order's cost.
    const indexer = playerKeyInTable ? undefined : database.startPlayerIndexer!();
    await indexer?.pass();
    const orders = new OrderService({ store: new OrderStore(database), clock: systemClock, ids: new IdGenerator() });
    const bodies = Array.from({ length: ORDERS }, (_, i) => body(i));
    const cpu = process.cpuUsage();
    const loop = performance.eventLoopUtilization();
    let next = 0;
    const worker = async () => {
      while (next < bodies.length) await orders.create(snapshot, bodies[next++] as CreateOrderBody);
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const busy = performance.eventLoopUtilization(loop).active * 1000;
    await indexer?.pass();
    const used = process.cpuUsage(cpu);
    return { cpu: (used.user + used.system) / ORDERS, loop: busy / ORDERS };
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const modes: { label: string; tempStore: 'MEMORY' | 'FILE'; without?: string; playerKeyInTable?: boolean }[] = [
  { label: 'temp_store FILE', tempStore: 'FILE' },
  { label: 'temp_store MEMORY (the service)', tempStore: 'MEMORY' },
  { label: 'MEMORY, the player key in the orders table, no worker', tempStore: 'MEMORY', playerKeyInTable: true },
  ...ORDER_INDEXES.map((i) => ({ label: `MEMORY, without ${i}`, tempStore: 'MEMORY' as const, without: i })),
];
const results = new Map<string, Cost[]>(modes.map((m) => [m.label, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const m of modes) results.get(m.label)!.push(await run(m.tempStore, m.without, m.playerKeyInTable));
}
console.log(`${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), node ${process.version}, ${ORDERS} orders per run, ${IN_FLIGHT} in flight`);
console.log('| setting | CPU µs per order (runs) | median | event loop busy µs per order (runs) | median |');
console.log('|---|---|---|---|---|');
const runs = (us: number[]) => `${us.map((u) => u.toFixed(1)).join(' / ')} | ${median(us).toFixed(1)}`;
for (const [label, costs] of results) {
  console.log(`| ${label} | ${runs(costs.map((c) => c.cpu))} | ${runs(costs.map((c) => c.loop))} |`);
}
