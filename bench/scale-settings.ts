/** The settings of `npm run bench:scale` (bench/scale.ts, which lists them) that its modules share. */
import os from 'node:os';
import path from 'node:path';

export const ROWS = Number(process.env.SCALE_ROWS ?? 10_000_000);
export const KINDS = (process.env.SCALE_DB ?? 'both') === 'both' ? ['sqlite', 'postgres'] : [process.env.SCALE_DB!];
export const DIR = process.env.SCALE_DIR ?? path.join(os.tmpdir(), 'combo-scale');
export const PG_URL = (process.env.SCALE_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/$/, '');
export const REUSE = process.env.SCALE_REUSE === '1';
export const ROUNDS = Number(process.env.SCALE_ROUNDS ?? 2);
export const LIST_RUNS = Number(process.env.SCALE_LIST_RUNS ?? 20);
export const duration = Number(process.env.BENCH_DURATION ?? 10);
export const WARMUP = Number(process.env.SCALE_WARMUP ?? 5);
export const connections = Number(process.env.BENCH_CONNECTIONS ?? 64);
export const MORE_GAMES = Number(process.env.SCALE_MORE_GAMES ?? 400);
export const SEED_ONLY = process.env.SCALE_SEED_ONLY === '1';
export const DROP = process.env.SCALE_DROP === '1';
/** Fixed so that a reused database's encrypted game secrets stay readable. */
export const SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

export const log = (s: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${s}\n`);

/** Seconds since `t` (a Date.now()), for the log. */
export const secondsSince = (t: number, digits = 1) => ((Date.now() - t) / 1000).toFixed(digits);
