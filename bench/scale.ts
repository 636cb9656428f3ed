/**
 * `npm run bench:scale`: the service with 10 million orders and 10 million sessions.
 *
 * For each database (SQLite, PostgreSQL): a fresh database is migrated and given 4 games by the
 * service itself (admin API), then filled by SQL set operations (a recursive CTE on SQLite,
 * generate_series on PostgreSQL) with SCALE_ROWS orders and SCALE_ROWS sessions spread over 180
 * days, 4 games (50/30/15/5 %) and 1,000,000 players. An empty database is prepared the same way
 * without the rows. Both services are started from the build and measured back to back:
 * create-order and enter-game (autocannon, 64 connections, pre-signed unique requests; req/s,
 * p50/p99 and server CPU µs per request), then the operator listings (GET /admin/v1/orders and
 * /admin/v1/sessions for every filter combination, and cursor paging deep into the data), each
 * timed sequentially: p50/p99/max per query; then the listings without a game again with
 * SCALE_MORE_GAMES empty games added.
 *
 * Settings: SCALE_ROWS (10000000), SCALE_DB (sqlite|postgres|both; both), SCALE_DIR (where the
 * SQLite files and the game secrets live; /tmp/combo-scale), SCALE_PG_URL
 * (postgres://postgres@127.0.0.1:5432; databases `combo_scale` and `combo_scale_empty` are
 * created there), SCALE_REUSE=1 (keep a seeded database from an earlier run with the same
 * SCALE_ROWS), SCALE_ROUNDS (empty/full measurement pairs, 2), SCALE_LIST_RUNS (timed runs per
 * listing query, 20), SCALE_MORE_GAMES (empty games added for the second pass of listings, 400;
 * 0: none), SCALE_WARMUP (s of untimed load on each service first, 5), BENCH_DURATION (s per throughput measurement, 10), BENCH_CONNECTIONS (64),
 * SCALE_SEED_ONLY=1 (prepare the databases, measure nothing), SCALE_DROP=1 (drop the PostgreSQL databases and SQLite files at the end).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rssMb, startService } from './lib.js';
import { dropAll, prepare, type Setup } from './scale-databases.js';
import { WALKS, listings, listingQueries, listingsReport, manyGamesListings } from './scale-listings.js';
import { measureThroughput, throughputReport } from './scale-throughput.js';
import { DIR, DROP, KINDS, MORE_GAMES, ROWS, SECRETS_KEY, SEED_ONLY, connections, duration } from './scale-settings.js';

async function main() {
  mkdirSync(DIR, { recursive: true });
  const report: string[] = [];
  const line = (s: string) => {
    report.push(s);
    console.log(s);
  };
  for (const kind of KINDS) {
    if (kind !== 'sqlite' && kind !== 'postgres') throw new Error(`SCALE_DB must be sqlite, postgres or both, not ${kind}`);
    const empty = await prepare(kind, false);
    const full = await prepare(kind, true);
    if (SEED_ONLY) continue;
    await measure(kind, empty, full, line);
  }
  writeFileSync(path.join(DIR, `report-${Date.now()}.md`), report.join('\n') + '\n');
  if (DROP) await dropAll();
}

/** Both services started from the build and measured back to back; `line` writes the report. */
async function measure(kind: string, empty: Setup, full: Setup, line: (s: string) => void): Promise<void> {
  const svcE = await startService({ DATABASE_URL: empty.databaseUrl, DATA_DIR: DIR, SECRETS_KEY });
  const svcF = await startService({ DATABASE_URL: full.databaseUrl, DATA_DIR: DIR, SECRETS_KEY });
  try {
    const rows = await measureThroughput(kind, { svc: svcE, setup: empty }, { svc: svcF, setup: full });
    const queries = await listingQueries(svcF);
    const lists = await listings(svcF, kind, queries, WALKS);
    if (MORE_GAMES > 0) lists.push(...(await manyGamesListings(svcF, kind, full.databaseUrl, queries)));
    const rss = rssMb(svcF.child.pid);
    const header = `\n## ${kind}: ${ROWS.toLocaleString('en')} orders and ${ROWS.toLocaleString('en')} sessions (${new Date().toISOString()}, ${os.cpus().length} cores, node ${process.version}, ${connections} connections, ${duration} s each)\n`;
    for (const s of [header, ...throughputReport(rows), ...listingsReport(lists, rss)]) line(s);
  } finally {
    await svcE.stop();
    await svcF.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
