/**
 * Measurements: the operator listings on the full database (GET /admin/v1/orders and
 * /admin/v1/sessions for every filter combination, and cursor paging deep into the data), each
 * timed sequentially: p50/p99/max per query.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { ADMIN, adminCall, quantile, type Service } from './lib.js';
import { EPOCH, GAMES, SPAN_MS } from './scale-rows.js';
import { LIST_RUNS, MORE_GAMES, log } from './scale-settings.js';

export interface ListTiming {
  name: string;
  rows: number;
  p50: number;
  p99: number;
  max: number;
}

async function timeGet(base: string, uri: string, runs: number): Promise<{ ms: number[]; body: any }> {
  const ms: number[] = [];
  let body: any;
  for (let k = 0; k < runs; k++) {
    const t = performance.now();
    const r = await fetch(base + uri, { headers: { authorization: `Bearer ${ADMIN}` } });
    body = await r.json();
    ms.push(performance.now() - t);
    if (r.status !== 200) {
      log(`GET ${uri}: ${r.status} ${JSON.stringify(body)}`);
      return { ms: [...ms, Number.POSITIVE_INFINITY], body: { data: [], next_cursor: null } };
    }
  }
  return { ms, body };
}

const cursorOf = (v: unknown[]) => Buffer.from(JSON.stringify(v), 'utf8').toString('base64url');

// A heavy player (10 % of all orders go to 10,000 players) and an ordinary one.
const heavy = 'p0000040'; // heavy players are those (i * 7919) % 10000 with i % 10 = 0: multiples of 10
const plain = 'p0123457';

/** Every listing query timed: [name, uri]; the cursor walks are in `listings`. */
export async function listingQueries(svc: Service): Promise<[string, string][]> {
  const now = Date.now();
  const mid = now - SPAN_MS / 2;
  const old = now - SPAN_MS + 86_400_000; // one day after the oldest row
  const firstRef = (await adminCall(svc.address, 'GET', `/admin/v1/orders?game_id=scale_g2&limit=1`)).data[0]?.reference_id ?? 'ref-1';
  return [...orderQueries(mid, old, firstRef), ...sessionQueries(old)];
}

function orderQueries(mid: number, old: number, firstRef: string): [string, string][] {
  const deepOrder = (t: number) => cursorOf([t, String((BigInt(t - EPOCH) << 22n) | 0xfffffn)]);
  const o = '/admin/v1/orders?limit=50';
  return [
    ['orders: no filter', o],
    ['orders: game_id', `${o}&game_id=scale_g1`],
    ['orders: game_id (5 % game)', `${o}&game_id=scale_g4`],
    ['orders: status=created', `${o}&status=created`],
    ['orders: status=paid', `${o}&status=paid`],
    ['orders: status=refunded', `${o}&status=refunded`],
    ['orders: game_id+status=delivered', `${o}&game_id=scale_g2&status=delivered`],
    ['orders: game_id+status=refunded (5 % game)', `${o}&game_id=scale_g4&status=refunded`],
    ['orders: game_id+status=created', `${o}&game_id=scale_g3&status=created`],
    ['orders: combo_id (heavy player)', `${o}&combo_id=${heavy}`],
    ['orders: combo_id', `${o}&combo_id=${plain}`],
    ['orders: game_id+combo_id', `${o}&game_id=scale_g1&combo_id=${heavy}`],
    ['orders: combo_id+status', `${o}&combo_id=${heavy}&status=delivered`],
    ['orders: game_id+combo_id+status', `${o}&game_id=scale_g1&combo_id=${heavy}&status=expired`],
    ['orders: reference_id', `${o}&reference_id=${firstRef}`],
    ['orders: game_id+reference_id', `${o}&game_id=scale_g2&reference_id=${firstRef}`],
    ['orders: unknown reference_id', `${o}&reference_id=nope-0`],
    ['orders: unknown combo_id', `${o}&combo_id=nobody`],
    ['orders: cursor at 50 % depth', `${o}&cursor=${deepOrder(mid)}`],
    ['orders: cursor at 99 % depth', `${o}&cursor=${deepOrder(old)}`],
    ['orders: game_id, cursor at 99 %', `${o}&game_id=scale_g4&cursor=${deepOrder(old)}`],
    ['orders: status=refunded, cursor at 99 %', `${o}&status=refunded&cursor=${deepOrder(old)}`],
    ['orders: game_id+status=paid, cursor at 99 %', `${o}&game_id=scale_g4&status=paid&cursor=${deepOrder(old)}`],
    ['orders: combo_id, cursor at 50 %', `${o}&combo_id=${heavy}&cursor=${deepOrder(mid)}`],
    ['orders: limit=200', `/admin/v1/orders?limit=200`],
  ];
}

function sessionQueries(old: number): [string, string][] {
  const deepSession = (t: number) => cursorOf([t, 'scale_g9', 'zzzz']);
  const s = '/admin/v1/sessions?limit=50';
  return [
    ['sessions: no filter', s],
    ['sessions: game_id', `${s}&game_id=scale_g4`],
    ['sessions: combo_id', `${s}&combo_id=${heavy}`],
    ['sessions: game_id+combo_id (with online_days)', `${s}&game_id=scale_g1&combo_id=${heavy}`],
    ['sessions: open=true', `${s}&open=true`],
    ['sessions: open=false', `${s}&open=false`],
    ['sessions: game_id+open=true', `${s}&game_id=scale_g4&open=true`],
    ['sessions: cursor at 99 % depth', `${s}&cursor=${deepSession(old)}`],
    ['sessions: game_id, cursor at 99 %', `${s}&game_id=scale_g4&cursor=${deepSession(old)}`],
  ];
}

/** Walks of 100 pages of 200 from the newest, each page timed once, with and without a filter. */
export const WALKS: [string, string][] = [
  ['orders: 100 pages of 200 (cursor walk)', '/admin/v1/orders?limit=200'],
  ['orders: game_id+status, 100 pages of 200', '/admin/v1/orders?limit=200&game_id=scale_g4&status=delivered'],
  ['sessions: 100 pages of 200 (cursor walk)', '/admin/v1/sessions?limit=200'],
];

function timing(name: string, ms: number[], rows: number): ListTiming {
  const s = [...ms].sort((a, b) => a - b);
  const r = (x: number) => Math.round(x * 10) / 10;
  return { name, rows, p50: r(quantile(s, 0.5)), p99: r(quantile(s, 0.99)), max: r(s[s.length - 1]!) };
}

/** The pages of a walk from `base`: each page's ms and the rows of all. */
async function walk(svc: Service, base: string): Promise<{ ms: number[]; rows: number }> {
  const ms: number[] = [];
  let cursor: string | null = null;
  let rows = 0;
  for (let p = 0; p < 100; p++) {
    const r: { ms: number[]; body: any } = await timeGet(svc.address, cursor ? `${base}&cursor=${cursor}` : base, 1);
    ms.push(r.ms[0]!);
    rows += r.body.data.length;
    cursor = r.body.next_cursor;
    if (!cursor) break;
  }
  return { ms, rows };
}

export async function listings(svc: Service, kind: string, queries: [string, string][], walks: [string, string][], suffix = ''): Promise<ListTiming[]> {
  const out: ListTiming[] = [];
  for (const [name, uri] of queries) {
    log(`${kind}: ${name}${suffix}`);
    await timeGet(svc.address, uri, 1); // warm-up (first run of a plan)
    const { ms, body } = await timeGet(svc.address, uri, LIST_RUNS);
    out.push(timing(name + suffix, ms, body.data.length));
  }
  for (const [name, base] of walks) {
    log(`${kind}: ${name}${suffix}`);
    const { ms, rows } = await walk(svc, base);
    out.push(timing(name + suffix, ms, rows));
  }
  return out;
}

/**
 * The listings without a game again, with MORE_GAMES empty games added, half of them between the
 * first and second seeded game and half between the second and third in game order: what an
 * operator running hundreds of games gets. The added games are removed again afterwards (by SQL:
 * the admin API deletes no game), so a reused database stays as seeded.
 */
export async function manyGamesListings(svc: Service, kind: string, databaseUrl: string, queries: [string, string][]): Promise<ListTiming[]> {
  const half = Math.ceil(MORE_GAMES / 2);
  const added = Array.from({ length: MORE_GAMES }, (_, i) => (i < half ? `scale_g1_m${String(i).padStart(4, '0')}` : `scale_g2_m${String(i).padStart(4, '0')}`));
  log(`${kind}: adding ${MORE_GAMES} empty games...`);
  for (const g of added) await adminCall(svc.address, 'POST', '/admin/v1/games', { game_id: g, name: g });
  try {
    const withoutGame = queries.filter(([name]) => !name.includes('game_id'));
    return await listings(svc, kind, withoutGame, WALKS.filter(([name]) => !name.includes('game_id')), ` (${GAMES.length + MORE_GAMES} games)`);
  } finally {
    await removeAddedGames(kind, databaseUrl);
  }
}

async function removeAddedGames(kind: string, databaseUrl: string): Promise<void> {
  // `_` matches any one character: the seeded games (scale_g1..scale_g4) are too short to match.
  const del = ['game_keys', 'games'].map((t) => `delete from ${t} where game_id like 'scale_g1_m%' or game_id like 'scale_g2_m%'`);
  if (kind === 'sqlite') {
    const db = new Database(databaseUrl.slice('sqlite:'.length));
    for (const q of del) db.prepare(q).run();
    db.close();
  } else {
    const c = new pg.Client({ connectionString: databaseUrl });
    await c.connect();
    for (const q of del) await c.query(q);
    await c.end();
  }
}

/** The report's lines on the listings: a row per query, then the verdict with the service's RSS. */
export function listingsReport(lists: ListTiming[], rss: number): string[] {
  const out = [`\n| listing (full database) | rows | p50 ms | p99 ms | max ms | < 50 ms |`, '|---|---|---|---|---|---|'];
  for (const l of lists) out.push(`| ${l.name} | ${l.rows} | ${l.p50} | ${l.p99} | ${l.max} | ${l.max < 50 ? 'yes' : l.p99 < 50 ? 'p99 yes, max no' : 'NO'} |`);
  const slow = lists.filter((l) => l.p99 >= 50);
  out.push(`\nlistings: ${slow.length === 0 ? 'PASS' : `FAIL (${slow.map((l) => l.name).join('; ')})`} (target p99 < 50 ms); service RSS after the run ${rss} MB`);
  return out;
}
