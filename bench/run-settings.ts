/** The settings of `npm run bench` (bench/run.ts, which lists them) that its modules share. */
import path from 'node:path';

export const duration = Number(process.env.BENCH_DURATION ?? 10);
export const warmup = Number(process.env.BENCH_WARMUP ?? 3);
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
export const only = process.env.BENCH_ONLY?.split(',');
export const databaseUrl = process.env.BENCH_DATABASE_URL;
export const ids = benchIds(process.env.BENCH_IDS);
/** Rounds of the closed-loop scenarios, each with its own bare run: ratios are taken within a round. */
export const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 1));
export const onPostgres = databaseUrl?.startsWith('postgres') ?? false;
/** Another checkout, built: its service runs the service scenarios beside this one's, in every round. */
export const baselineDir = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : undefined;
/** The scenarios run on the baseline too, and the label of their rows. */
export const BASELINE_SCENARIOS = ['create-order', 'enter-game', 'query-binding'];
export const BASELINE_LABEL = ' (baseline)';

/**
 * BENCH_IDS. `sequential` ids append to their indexes; the players, taken in turn, do not. With
 * `random`, the session's primary key and the idempotency key land at random too, as they do
 * when clients make random ids (docs/benchmarks.md, "Scenarios").
 */
function benchIds(value: string | undefined): 'sequential' | 'random' {
  if (value === undefined || value === '' || value === 'sequential') return 'sequential';
  if (value === 'random') return 'random';
  throw new Error(`BENCH_IDS must be sequential or random, not ${JSON.stringify(value)}`);
}
