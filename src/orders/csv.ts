import type { AdminOrder, ListOrdersQuery, OrderPage } from './admin-schemas.js';

/** The columns of an order listing's CSV export, in order. */
export const CSV_COLUMNS = [
  'order_id',
  'game_id',
  'status',
  'reference_id',
  'combo_id',
  'product_id',
  'quantity',
  'amount',
  'currency',
  'platform',
  'is_sandbox',
  'late_payment',
  'context',
  'created_at',
  'paid_at',
  'delivered_at',
  'refunded_at',
  'canceled_at',
  'expired_at',
] as const satisfies readonly (keyof AdminOrder)[];

/** Rows read per page while streaming (the listing's largest page). */
const PAGE = 200;

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote, CR or LF, quotes doubled. A
 * text cell a spreadsheet would read as a formula (starting with = + - @, tab or CR: OWASP's
 * CSV injection advice) gets a leading apostrophe, so that a reference id or context chosen by
 * a player cannot run as one in the operator's spreadsheet. Times are ISO 8601 UTC.
 */
export function csvCell(key: string, v: unknown): string {
  if (v === null || v === undefined) return '';
  let s: string;
  if (typeof v === 'number') s = key.endsWith('_at') ? new Date(v).toISOString() : String(v);
  else if (typeof v === 'boolean') s = v ? 'true' : 'false';
  else s = /^[=+\-@\t\r]/.test(String(v)) ? `'${String(v)}` : String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function csvLine(cells: string[]): string {
  return `${cells.join(',')}\r\n`;
}

/** The header, then every order the filters match, newest first, a page of lines at a time. */
export async function* ordersCsv(list: (q: ListOrdersQuery) => Promise<OrderPage>, q: Omit<ListOrdersQuery, 'limit' | 'cursor'>): AsyncGenerator<string> {
  yield csvLine([...CSV_COLUMNS]);
  let cursor: string | undefined;
  do {
    const page = await list({ ...q, limit: PAGE, cursor });
    yield page.data.map((o) => csvLine(CSV_COLUMNS.map((c) => csvCell(c, o[c])))).join('');
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
}

/** `orders-<game or all>-<UTC date>.csv`: a game id holds only [A-Za-z0-9_.-] (games/schemas.ts): nothing to quote. */
export function csvFilename(gameId: string | undefined, now: number): string {
  return `orders-${gameId ?? 'all-games'}-${new Date(now).toISOString().slice(0, 10)}.csv`;
}
