/**
 * `npm run bench:scrape`: what a /metrics scrape costs the requests around it on a large
 * database. Starts the service from the build on SCRAPE_DATABASE_URL (default: the SQLite file
 * `npm run bench:scale` seeds, /tmp/combo-scale/combo_scale.db), sends GET /healthz every 2 ms
 * from one connection, scrapes /metrics SCRAPE_RUNS times (default 5) in a row, and prints each
 * scrape's time and the health answers' p50/p99/max latency during the scrapes and before them.
 * A scrape that blocked the event loop shows as health latencies as long as the scrape.
 */
import { Agent, request } from 'undici';
import { quantile, startService } from './lib.js';

const databaseUrl = process.env.SCRAPE_DATABASE_URL ?? 'sqlite:/tmp/combo-scale/combo_scale.db';
const runs = Number(process.env.SCRAPE_RUNS ?? 5);
// The seeded database's secrets are sealed with bench:scale's key.
const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

async function probe(base: string, agent: Agent, until: () => boolean): Promise<number[]> {
  const ms: number[] = [];
  while (!until()) {
    const t = performance.now();
    const r = await request(`${base}/healthz`, { dispatcher: agent });
    await r.body.text();
    ms.push(performance.now() - t);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return ms.sort((a, b) => a - b);
}

const row = (label: string, ms: number[]) =>
  `| ${label} | ${ms.length} | ${quantile(ms, 0.5).toFixed(1)} | ${quantile(ms, 0.99).toFixed(1)} | ${(ms[ms.length - 1] ?? 0).toFixed(1)} |`;

async function main() {
  const svc = await startService({ DATABASE_URL: databaseUrl, DATA_DIR: '/tmp/combo-scale', SECRETS_KEY });
  const agent = new Agent({ connections: 2 });
  try {
    let quietDone = false;
    const quietTimer = setTimeout(() => (quietDone = true), 2000);
    const quiet = await probe(svc.address, agent, () => quietDone);
    clearTimeout(quietTimer);
    let scraping = true;
    const during = probe(svc.address, agent, () => !scraping);
    const scrapes: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      const r = await request(`${svc.address}/metrics`, { dispatcher: agent });
      const text = await r.body.text();
      if (r.statusCode !== 200 || !text.includes('combo_orders')) throw new Error(`/metrics answered ${r.statusCode}`);
      scrapes.push(performance.now() - t);
    }
    scraping = false;
    const busy = await during;
    console.log(`\n${new Date().toISOString()}  ${databaseUrl}\n`);
    console.log(`/metrics scrape ms: ${scrapes.map((s) => s.toFixed(0)).join(', ')}\n`);
    console.log('| GET /healthz every 2 ms | answers | p50 ms | p99 ms | max ms |');
    console.log('|---|---|---|---|---|');
    console.log(row('before the scrapes', quiet));
    console.log(row('during the scrapes', busy));
  } finally {
    await agent.close();
    await svc.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
