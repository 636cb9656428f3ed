/**
 * `npm run bench:sqlite-writes`: the database side of create-order alone, in process, on a
 * fresh SQLite file: the real group commit (`Database.transaction`) and the real OrderStore
 * statements (idempotency probe, order row, creation event), 64 transactions in flight, as the
 * service runs them. Prints the process CPU per order for the journal settings compared:
 * `temp_store = MEMORY` (the service's) and `FILE` (SQLite's default).
 *
 * Settings: BENCH_ORDERS (40,000 per setting), BENCH_ROUNDS (3, alternated).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { migrateToLatest, openDatabase } from '../src/db/index.js';
import { OrderStore, type OrderRow } from '../src/orders/store.js';

const ORDERS = Number(process.env.BENCH_ORDERS ?? 40_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IN_FLIGHT = 64;

function order(i: number, now: number): OrderRow {
  return {
    order_id: `ord_${now.toString(36)}${i.toString(36).padStart(6, '0')}`,
    game_id: 'game_bench',
    reference_id: `ref-${randomBytes(8).toString('hex')}`,
    combo_id: `combo_${i % 5000}`,
    product_id: 'gem60',
    platform: 'ios',
    notify_url: 'http://127.0.0.1:9/notify',
    quantity: 1,
    meta: '{"zone_id":"z1","server_id":"s1","role_id":"r1","role_name":"name","role_level":10}',
    context: null,
    amount: 600,
    currency: 'CNY',
    status: 'created',
    token_secret: randomBytes(16).toString('base64url'),
    request_hash: randomBytes(32).toString('base64url'),
    is_sandbox: 0,
    late_payment: 0,
    created_at: now,
    expires_at: now + 900_000,
    updated_at: now,
    paid_at: null,
    delivered_at: null,
    expired_at: null,
    canceled_at: null,
    refunded_at: null,
  };
}

/** CPU µs per order for `ORDERS` orders created on a fresh file with the given temp_store. */
async function run(tempStore: 'MEMORY' | 'FILE'): Promise<number> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-bench-writes-'));
  const database = openDatabase(`sqlite:${path.join(dir, 'bench.db')}`);
  try {
    await migrateToLatest(database);
    await sql.raw(`pragma temp_store = ${tempStore}`).execute(database.db);
    const store = new OrderStore(database.db, database.transaction, 'sqlite');
    const start = Date.now();
    const rows = Array.from({ length: ORDERS }, (_, i) => order(i, start + i));
    const cpu = process.cpuUsage();
    let next = 0;
    const worker = async () => {
      while (next < rows.length) {
        const row = rows[next++] as OrderRow;
        await store.transaction(async (trx) => {
          if (await store.findByReference(trx, row.game_id, row.reference_id)) return;
          await store.insert(trx, row);
          await store.insertEvent(trx, { event_id: `oev_${row.order_id}`, order_id: row.order_id, from_status: null, to_status: 'created', at: row.created_at, detail: null });
        });
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / ORDERS;
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results: Record<string, number[]> = { MEMORY: [], FILE: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const mode of ['FILE', 'MEMORY'] as const) results[mode]!.push(await run(mode));
}
console.log(`${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), node ${process.version}, ${ORDERS} orders per run, ${IN_FLIGHT} in flight`);
console.log('| temp_store | CPU µs per order (runs) |');
console.log('|---|---|');
for (const [mode, us] of Object.entries(results)) console.log(`| ${mode} | ${us.map((u) => u.toFixed(1)).join(' / ')} |`);
