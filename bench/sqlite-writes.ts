/**
 * `npm run bench:sqlite-writes`: create-order without HTTP, in process, on a fresh SQLite file:
 * the real OrderService and OrderStore through the real group commit (`Database.transaction`:
 * idempotency probe, order row), 64 orders in flight, as the service runs them. Prints the
 * process CPU per order for the journal settings compared, `temp_store = MEMORY` (the
 * service's) and `FILE` (SQLite's default), and, with the service's setting, with each index of
 * the orders table dropped in turn: what each index costs a new order.
 *
 * Settings: BENCH_ORDERS (40,000 per setting), BENCH_ROUNDS (3, alternated).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
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
const ORDER_INDEXES = ['orders_status_expires', 'orders_game_created_at', 'orders_game_status_created', 'orders_player_created'];

/**
 * CPU µs per order for `ORDERS` orders created on a fresh file with the given temp_store, and
 * without the index `without` if given.
 */
async function run(tempStore: 'MEMORY' | 'FILE', without?: string): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-writes-'));
  const database = openDatabase(`sqlite:${path.join(dir, 'bench.db')}`);
  try {
    await migrateToLatest(database);
    await sql.raw(`pragma temp_store = ${tempStore}`).execute(database.db);
    if (without) await sql.raw(`drop index ${without}`).execute(database.db);
    const orders = new OrderService({ store: new OrderStore(database), clock: systemClock, ids: new IdGenerator() });
    const bodies = Array.from({ length: ORDERS }, (_, i) => body(i));
    const cpu = process.cpuUsage();
    let next = 0;
    const worker = async () => {
      while (next < bodies.length) await orders.create(snapshot, bodies[next++] as CreateOrderBody);
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / ORDERS;
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const modes: { label: string; tempStore: 'MEMORY' | 'FILE'; without?: string }[] = [
  { label: 'temp_store FILE', tempStore: 'FILE' },
  { label: 'temp_store MEMORY (the service)', tempStore: 'MEMORY' },
  ...ORDER_INDEXES.map((i) => ({ label: `MEMORY, without ${i}`, tempStore: 'MEMORY' as const, without: i })),
];
const results = new Map<string, number[]>(modes.map((m) => [m.label, []]));
for (let r = 0; r < ROUNDS; r++) {
  for (const m of modes) results.get(m.label)!.push(await run(m.tempStore, m.without));
}
console.log(`${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), node ${process.version}, ${ORDERS} orders per run, ${IN_FLIGHT} in flight`);
console.log('| setting | CPU µs per order (runs) | median |');
console.log('|---|---|---|');
for (const [label, us] of results) {
  console.log(`| ${label} | ${us.map((u) => u.toFixed(1)).join(' / ')} | ${median(us).toFixed(1)} |`);
}
