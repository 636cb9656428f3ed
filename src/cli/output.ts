import type { Io } from './io.js';

/**
 * Output for people (tables) and for scripts (--json: the API's answer verbatim, one JSON
 * document). Admin `*_at` fields are Unix ms; tables show them as ISO times.
 */
const MAX_CELL = 60;

function cell(key: string, value: unknown, max = Infinity): string {
  let s: string;
  if (value === null || value === undefined) s = '-';
  else if (typeof value === 'number' && key.endsWith('_at') && value > 1e12) s = new Date(value).toISOString();
  else if (typeof value === 'object') s = JSON.stringify(value);
  else s = String(value);
  s = s.replace(/[\r\n\t]/g, ' ');
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** Rows of objects as aligned columns; `columns` picks and orders them (default: all keys). */
export function table(rows: Array<Record<string, unknown>>, columns?: string[]): string {
  const cols = columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = rows.map((r) => cols.map((c) => cell(c, r[c], MAX_CELL)));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => (row[i] as string).length)));
  const line = (vals: string[]) => vals.map((v, i) => v.padEnd(widths[i] as number)).join('  ').trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n') + '\n';
}

/** One object as `key  value` lines. */
export function keyValue(obj: Record<string, unknown>): string {
  const width = Math.max(0, ...Object.keys(obj).map((k) => k.length));
  return Object.entries(obj).map(([k, v]) => `${k.padEnd(width)}  ${cell(k, v)}`).join('\n') + '\n';
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Best table for any admin answer: a `data` list as columns, an object as key/value. */
export function render(body: unknown, columns?: string[]): string {
  if (Array.isArray(body) && body.every(isRecord)) return body.length ? table(body, columns) : '(none)\n';
  if (isRecord(body)) {
    const list = body.data;
    if (Array.isArray(list) && list.every(isRecord)) {
      const rest = Object.fromEntries(Object.entries(body).filter(([k, v]) => k !== 'data' && v !== null && v !== undefined));
      return (list.length ? table(list, columns) : '(none)\n') + (Object.keys(rest).length ? `\n${keyValue(rest)}` : '');
    }
    return Object.keys(body).length ? keyValue(body) : 'ok\n';
  }
  return typeof body === 'string' ? `${body}\n` : `${JSON.stringify(body, null, 2)}\n`;
}

export function print(io: Io, json: boolean, body: unknown, columns?: string[]): void {
  io.out(json ? `${JSON.stringify(body, null, 2)}\n` : render(body, columns));
}
