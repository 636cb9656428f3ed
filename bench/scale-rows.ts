/**
 * The seeded data of `npm run bench:scale`. Row i (0..ROWS-1) of each table is a pure function of
 * i: a few multiplicative hashes give game, player, product, status and durations; time grows
 * with i (as ids do in production).
 */
import { randomBytes } from 'node:crypto';
import { ROWS } from './scale-settings.js';

export type Kind = 'sqlite' | 'postgres';

export const GAMES = ['scale_g1', 'scale_g2', 'scale_g3', 'scale_g4'];
export const PRODUCTS = [
  { id: 'gem_60', price: 600 },
  { id: 'gem_300', price: 3000 },
  { id: 'gem_980', price: 9800 },
];
export const PLAYERS = 1_000_000;
export const SPAN_MS = 180 * 86_400_000;
export const EPOCH = 1_704_067_200_000; // of the snowflake order ids (src/lib/ids.ts)
const SEED_NODE = 1000; // node id of seeded order ids; running services draw theirs at random

const ORDER_COLS = 'order_id, game_id, reference_id, combo_id, product_id, platform, notify_url, quantity, meta, context, amount, currency, status, token_secret, is_sandbox, late_payment, created_at, expires_at, updated_at, paid_at, delivered_at, expired_at, canceled_at, refunded_at';
const SESSION_COLS = 'game_id, session_id, combo_id, entered_at, left_at, close_reason, created_at';

/** Shared SQL expressions; `i` is the row number, `t0` the first created_at. */
function exprs(kind: Kind, t0: number) {
  const step = Math.floor(SPAN_MS / ROWS);
  const created = `(${t0} + i * ${step})`;
  const pct = `((i * 37) % 100)`; // game share
  const game = `CASE WHEN ${pct} < 50 THEN 'scale_g1' WHEN ${pct} < 80 THEN 'scale_g2' WHEN ${pct} < 95 THEN 'scale_g3' ELSE 'scale_g4' END`;
  // 10 % of rows go to 10,000 heavy players, the rest spread over all 1,000,000.
  const playerNo = `CASE WHEN i % 10 = 0 THEN (i * 7919) % 10000 ELSE (i * 2654435761) % ${PLAYERS} END`;
  const player = kind === 'sqlite' ? `printf('p%07d', ${playerNo})` : `'p' || lpad((${playerNo})::text, 7, '0')`;
  const hex16 = kind === 'sqlite' ? `lower(hex(randomblob(16)))` : `md5(i::text || '${randomBytes(4).toString('hex')}')`;
  const least = kind === 'sqlite' ? 'min' : 'least';
  const greatest = kind === 'sqlite' ? 'max' : 'greatest';
  return { step, created, game, player, hex16, least, greatest };
}

function ordersSelect(kind: Kind, t0: number, now: number): string {
  const { created, game, player, hex16, greatest } = exprs(kind, t0);
  const prod = `(((i * 40503) / 1000) % 3)`;
  const st = `(((i * 2654435761) / 1000000) % 100)`; // independent of the game share
  // The last 30 minutes (the order TTL) are unpaid; older orders: 55 % expired, 35 % delivered,
  // 4 % canceled, 2 % refunded, 4 % paid (delivery pending or failed).
  const status = `CASE WHEN ${created} > ${now - 1_800_000} THEN 'created' WHEN ${st} < 55 THEN 'expired' WHEN ${st} < 90 THEN 'delivered' WHEN ${st} < 94 THEN 'canceled' WHEN ${st} < 96 THEN 'refunded' ELSE 'paid' END`;
  const text = (s: string) => (kind === 'sqlite' ? s : `${s}::text`);
  return `
    SELECT
      ${text(`((${created} - ${EPOCH}) * 4194304 + ${SEED_NODE} * 4096 + i % 4096)`)} AS order_id,
      ${game} AS game_id,
      'ref-' || i AS reference_id,
      ${player} AS combo_id,
      CASE ${prod} WHEN 0 THEN 'gem_60' WHEN 1 THEN 'gem_300' ELSE 'gem_980' END AS product_id,
      CASE WHEN i % 5 < 3 THEN 'android' WHEN i % 5 = 3 THEN 'ios' ELSE 'windows' END AS platform,
      'https://' || ${game} || '.example.com/notify' AS notify_url,
      1 AS quantity,
      '{"zone_id":"z' || (i % 7) || '","server_id":"s' || (i % 40) || '","role_id":"r' || i || '","role_level":' || (i % 90) || '}' AS meta,
      NULL AS context,
      CASE ${prod} WHEN 0 THEN 600 WHEN 1 THEN 3000 ELSE 9800 END AS amount,
      'CNY' AS currency,
      ${status} AS status,
      ${hex16} AS token_secret,
      CASE WHEN i % 50 = 0 THEN 1 ELSE 0 END AS is_sandbox,
      0 AS late_payment,
      ${created} AS created_at,
      ${created} + 1800000 AS expires_at,
      ${created} + CASE ${status} WHEN 'created' THEN 0 WHEN 'expired' THEN 1801000 WHEN 'canceled' THEN 60000 WHEN 'refunded' THEN 86400000 WHEN 'delivered' THEN 30500 ELSE 30000 END AS updated_at,
      CASE WHEN ${status} IN ('paid', 'delivered', 'refunded') THEN ${created} + 30000 END AS paid_at,
      CASE WHEN ${status} IN ('delivered', 'refunded') THEN ${created} + 30500 END AS delivered_at,
      CASE WHEN ${status} = 'expired' THEN ${created} + 1801000 END AS expired_at,
      CASE WHEN ${status} = 'canceled' THEN ${created} + 60000 END AS canceled_at,
      CASE WHEN ${status} = 'refunded' THEN ${greatest}(${created} + 86400000, 0) END AS refunded_at`;
}

function sessionsSelect(kind: Kind, t0: number, now: number): string {
  const { created, game, player, hex16, least } = exprs(kind, t0);
  // Sessions of the last 2 hours: one in three still open. Closed ones lasted 1 min..3 h
  // (capped at now); 2 % closed by the timeout sweep, the rest by leave-game.
  const open = `(${created} > ${now - 7_200_000} AND i % 3 = 0)`;
  return `
    SELECT
      ${game} AS game_id,
      ${hex16} AS session_id,
      ${player} AS combo_id,
      ${created} AS entered_at,
      CASE WHEN ${open} THEN NULL ELSE ${least}(${created} + 60000 + ((i * 7907) % 10800) * 1000, ${now}) END AS left_at,
      CASE WHEN ${open} THEN NULL WHEN i % 50 = 0 THEN 'timeout' ELSE 'leave' END AS close_reason,
      ${created} AS created_at`;
}

/** [table, columns, SELECT of row i] of both tables, rows created from SPAN_MS before `now`. */
export function seededTables(kind: Kind, now: number) {
  const t0 = now - SPAN_MS;
  return [
    ['orders', ORDER_COLS, ordersSelect(kind, t0, now)],
    ['sessions', SESSION_COLS, sessionsSelect(kind, t0, now)],
  ] as const;
}
