import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORMS } from '../src/orders/schemas.js';
import { storedRows } from './helpers/raw.js';
import { ADMIN_TOKEN, admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * rest-interface 2.1, 2.2 and 2.4, field by field, at every bound (min-1, min, max, max+1).
 * Lengths count Unicode code points (PROTOCOL 3), so each bound is tried with ASCII, a CJK
 * character (1 UTF-16 unit, 3 UTF-8 bytes) and an emoji (1 code point, 2 UTF-16 units).
 */
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => t?.stop());

const CHARS = [
  { kind: 'ascii', ch: 'a' },
  { kind: 'cjk', ch: '龍' },
  { kind: 'emoji', ch: '😀' },
] as const;

let uniq = 0;
/** A unique string of exactly n code points: a short ASCII prefix, then `ch`. */
function uniqueOf(n: number, ch: string): string {
  const prefix = (++uniq).toString(36);
  return n <= prefix.length ? ch.repeat(n) : prefix + ch.repeat(n - prefix.length);
}
const codePoints = (s: string) => [...s].length;

type Where = 'top' | 'meta';
interface StringField {
  field: string;
  where: Where;
  min: number;
  max: number;
  required: boolean;
  make(n: number, ch: string): string;
}

const NOTIFY_PREFIX = 'http://a.io/'; // 12 code points
const ORDER_STRING_FIELDS: StringField[] = [
  { field: 'reference_id', where: 'top', min: 8, max: 64, required: true, make: uniqueOf },
  { field: 'combo_id', where: 'top', min: 1, max: 64, required: true, make: (n, ch) => ch.repeat(n) },
  { field: 'product_id', where: 'top', min: 1, max: 64, required: true, make: (n, ch) => ch.repeat(n) },
  { field: 'notify_url', where: 'top', min: 14, max: 255, required: true, make: (n, ch) => NOTIFY_PREFIX + ch.repeat(n - NOTIFY_PREFIX.length) },
  { field: 'context', where: 'top', min: 1, max: 255, required: false, make: (n, ch) => ch.repeat(n) },
  ...(['zone_id', 'server_id', 'role_id', 'role_name'] as const).map(
    (f): StringField => ({ field: f, where: 'meta', min: 1, max: 64, required: false, make: (n, ch) => ch.repeat(n) }),
  ),
];

interface Row {
  name: string;
  body: () => Record<string, unknown>;
  expect: 200 | 400;
  /** The field the 400 message must name (dotted path). */
  field?: string;
  /** After a 200: checks the stored order row. */
  stored?: (row: Record<string, unknown>) => void;
}

function withField(f: StringField, value: string): Record<string, unknown> {
  if (f.where === 'meta') return orderBody({ meta: { [f.field]: value } });
  return orderBody({ [f.field]: value });
}

function boundRows(): Row[] {
  const rows: Row[] = [];
  for (const f of ORDER_STRING_FIELDS) {
    const dotted = f.where === 'meta' ? `meta.${f.field}` : f.field;
    for (const { kind, ch } of CHARS) {
      for (const [label, n] of [
        ['min-1', f.min - 1],
        ['min', f.min],
        ['max', f.max],
        ['max+1', f.max + 1],
      ] as const) {
        const ok = n >= f.min && n <= f.max;
        // An optional string sent as "" is treated as absent (PROTOCOL 3): 200, stored as absent.
        const emptyOptional = n === 0 && !f.required;
        let value = '';
        rows.push({
          name: `${dotted} ${label} (${n} code points, ${kind})`,
          body: () => {
            value = n === 0 ? '' : f.make(n, ch);
            expect(codePoints(value)).toBe(n);
            return withField(f, value);
          },
          expect: ok || emptyOptional ? 200 : 400,
          field: dotted,
          stored: (row) => {
            const expected = emptyOptional ? undefined : value;
            if (f.where === 'top') expect(row[f.field]).toBe(expected ?? null);
            else expect(row.meta === null ? undefined : JSON.parse(row.meta as string)[f.field]).toBe(expected);
          },
        });
      }
    }
  }
  return rows;
}

const raw1e400 = Symbol('1e400');

function typeRows(): Row[] {
  const bad: [string, unknown][] = [
    ['reference_id', 12345678],
    ['reference_id', null],
    ['reference_id', ['abcdefgh']],
    ['reference_id', { id: 'abcdefgh' }],
    ['combo_id', 42],
    ['combo_id', true],
    ['combo_id', null],
    ['product_id', 60],
    ['product_id', ['gem_60']],
    ['platform', 'IOS'],
    ['platform', 'linux'],
    ['platform', ''],
    ['platform', 1],
    ['platform', null],
    ['platform', 'i'.repeat(33)],
    ['notify_url', 'ftp://game.example.com/notify'],
    ['notify_url', '/relative/notify/path'],
    ['notify_url', 'game.example.com/notify'],
    ['notify_url', 'javascript:alert(1)//x'],
    ['notify_url', 'http://'.padEnd(20, ' ')],
    ['notify_url', 12345678901234],
    ['notify_url', 'https://game.example.com//notify'],
    ['notify_url', 'http://game.example.com:0/notify'],
    ['notify_url', 'https://game.example.com/a%zz'],
    ['notify_url', 'https://game.example.com/notify?x=%2'],
    ['quantity', 0],
    ['quantity', 101],
    ['quantity', -1],
    ['quantity', 1.5],
    ['quantity', '5'],
    ['quantity', null],
    ['quantity', [5]],
    ['quantity', true],
    ['quantity', raw1e400],
    ['meta', 'zone-1'],
    ['meta', ['zone-1']],
    ['meta', null],
    ['meta', 5],
    ['meta.role_level', 1.5],
    ['meta.role_level', '5'],
    ['meta.role_level', null],
    ['meta.role_level', [5]],
    ['meta.role_level', raw1e400],
    ['meta.role_level', Number.MAX_SAFE_INTEGER + 1],
    ['meta.zone_id', 7],
    ['meta.role_name', null],
    ['context', 5],
    ['context', null],
    ['context', { a: 1 }],
  ];
  const rows: Row[] = bad.map(([field, value]) => ({
    name: `${field} = ${value === raw1e400 ? '1e400' : JSON.stringify(value)}`,
    body: () => setPath(orderBody(), field, value),
    expect: 400,
    field,
  }));
  const good: [string, unknown][] = [
    ['quantity', 1],
    ['quantity', 100],
    ['meta.role_level', 0],
    ['meta.role_level', -5],
    ['meta.role_level', Number.MAX_SAFE_INTEGER],
    ['notify_url', 'https://game.example.com:8443/notify?x=1'],
    ['notify_url', 'HTTP://GAME.EXAMPLE.COM/NOTIFY'],
    ...PLATFORMS.map((p): [string, unknown] => ['platform', p]),
  ];
  for (const [field, value] of good) {
    rows.push({
      name: `${field} = ${JSON.stringify(value)} is accepted`,
      body: () => setPath(orderBody(), field, value),
      expect: 200,
      stored: (row) => {
        if (field.startsWith('meta.')) expect(JSON.parse(row.meta as string)[field.slice(5)]).toBe(value);
        else expect(row[field]).toBe(value);
      },
    });
  }
  for (const field of ['reference_id', 'combo_id', 'product_id', 'platform', 'notify_url']) {
    rows.push({
      name: `${field} missing`,
      body: () => {
        const b = orderBody();
        delete b[field];
        return b;
      },
      expect: 400,
      field,
    });
  }
  return rows;
}

function setPath(body: Record<string, unknown>, dotted: string, value: unknown): Record<string, unknown> {
  const [a, b] = dotted.split('.') as [string, string | undefined];
  if (b === undefined) body[a] = value;
  else body[a] = { ...((body[a] as object) ?? {}), [b]: value };
  return body;
}

/** JSON text of a body; the 1e400 marker becomes the literal number token 1e400. */
function serialize(body: Record<string, unknown>): string {
  return JSON.stringify(body, (_k, v) => (v === raw1e400 ? '__1E400__' : v)).replace('"__1E400__"', '1e400');
}

describe('create-order field bounds (rest-interface 2.1, 2.2)', () => {
  let game: TestGame;
  beforeAll(async () => {
    game = await createGame(t);
    // Products whose ids sit exactly at product_id's bounds, in each kind of character.
    for (const { ch } of CHARS) {
      for (const n of [1, 64]) {
        const id = ch.repeat(n);
        const r = await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/${encodeURIComponent(id)}`, { name: 'p', price: 100, currency: 'CNY' });
        expect(r.status, r.text).toBe(200);
        expect(r.body.product_id).toBe(id);
      }
    }
  });

  it.each([...boundRows(), ...typeRows()].map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const body = row.body();
    const before = await storedRows(t, game.gameId);
    const r = await signed(t, game, 'POST', '/v1/server/create-order', serialize(body));
    expect(r.status, r.text).toBe(row.expect);
    const after = await storedRows(t, game.gameId);
    if (row.expect === 400) {
      expect(r.body.error).toBe('invalid_request');
      expect(r.body.message).toContain(row.field);
      expect(after).toEqual(before);
      return;
    }
    expect(Object.keys(r.body).sort()).toEqual(['expires_at', 'order_id', 'order_token']);
    expect(after.orders).toBe(before.orders + 1);
    const stored = await t.service.database.db.selectFrom('orders').selectAll().where('order_id', '=', r.body.order_id).executeTakeFirstOrThrow();
    expect(stored.reference_id).toBe(body.reference_id);
    row.stored?.(stored as Record<string, unknown>);
  });

  it('ignores unknown fields, at the top and in meta', async () => {
    const r = await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ surprise: 1, meta: { role_name: '剑客', mood: 'happy' } }));
    expect(r.status, r.text).toBe(200);
    const stored = await t.service.database.db.selectFrom('orders').select('meta').where('order_id', '=', r.body.order_id).executeTakeFirstOrThrow();
    expect(JSON.parse(stored.meta as string)).toEqual({ role_name: '剑客' });
  });
});

describe.each(['enter-game', 'leave-game'])('%s field bounds (rest-interface 2.4)', (endpoint) => {
  let game: TestGame;
  beforeAll(async () => {
    game = await createGame(t);
  });
  const session = (over: Record<string, unknown> = {}) => ({ combo_id: 'player-1', session_id: `s-${randomBytes(6).toString('hex')}`, ...over });

  const rows: Row[] = [];
  for (const field of ['combo_id', 'session_id']) {
    for (const { kind, ch } of CHARS) {
      for (const [label, n] of [
        ['min-1', 0],
        ['min', 1],
        ['max', 64],
        ['max+1', 65],
      ] as const) {
        rows.push({
          name: `${field} ${label} (${n} code points, ${kind})`,
          body: () => session({ [field]: field === 'session_id' ? uniqueOf(n, ch) : ch.repeat(n) }),
          expect: n >= 1 && n <= 64 ? 200 : 400,
          field,
        });
      }
    }
    for (const bad of [7, null, true, ['x'], { id: 'x' }]) {
      rows.push({ name: `${field} = ${JSON.stringify(bad)}`, body: () => session({ [field]: bad }), expect: 400, field });
    }
    rows.push({
      name: `${field} missing`,
      body: () => {
        const b: Record<string, unknown> = session();
        delete b[field];
        return b;
      },
      expect: 400,
      field,
    });
  }
  rows.push({ name: 'unknown fields are ignored', body: () => session({ extra: 'x', at: 5 }), expect: 200 });

  it.each(rows.map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const body = row.body();
    const before = await storedRows(t, game.gameId);
    const r = await signed(t, game, 'POST', `/v1/server/${endpoint}`, body);
    expect(r.status, r.text).toBe(row.expect);
    const after = await storedRows(t, game.gameId);
    if (row.expect === 400) {
      expect(r.body.error).toBe('invalid_request');
      expect(r.body.message).toContain(row.field);
      expect(after).toEqual(before);
      return;
    }
    expect(r.body).toEqual({});
    expect(after.sessions).toBe(before.sessions + 1);
    const stored = await t.service.database.db
      .selectFrom('sessions')
      .selectAll()
      .where('game_id', '=', game.gameId)
      .where('session_id', '=', body.session_id as string)
      .executeTakeFirstOrThrow();
    expect(stored.combo_id).toBe(body.combo_id);
  });
});

describe('strings no database can store as sent (U+0000, unpaired surrogates)', () => {
  let game: TestGame;
  beforeAll(async () => {
    game = await createGame(t);
  });
  const values = [
    ['U+0000', 'a\u0000b'],
    ['a lone high surrogate', 'x\ud800'],
    ['a lone low surrogate', '\udc00x'],
    ['surrogates in the wrong order', '\ude00\ud83d'],
  ] as const;

  it.each(values)('create-order: %s in a string field -> 400 naming it, nothing stored', async (_n, v) => {
    for (const [field, body] of [
      ['combo_id', orderBody({ combo_id: v })],
      ['reference_id', orderBody({ reference_id: `ref-${v}-123456` })],
      ['meta.role_name', orderBody({ meta: { role_name: v } })],
      ['context', orderBody({ context: v })],
    ] as const) {
      const before = await storedRows(t, game.gameId);
      const r = await signed(t, game, 'POST', '/v1/server/create-order', body);
      expect(r.status, `${field}: ${r.text}`).toBe(400);
      expect(r.body.error).toBe('invalid_request');
      expect(r.body.message).toContain(field);
      expect(await storedRows(t, game.gameId)).toEqual(before);
    }
  });

  it.each(values)('enter-game and leave-game: %s in session_id -> 400, nothing stored', async (_n, v) => {
    for (const uri of ['/v1/server/enter-game', '/v1/server/leave-game']) {
      const before = await storedRows(t, game.gameId);
      const r = await signed(t, game, 'POST', uri, { combo_id: 'p', session_id: v });
      expect(r.status, r.text).toBe(400);
      expect(r.body.message).toContain('session_id');
      expect(await storedRows(t, game.gameId)).toEqual(before);
    }
  });

  it('an emoji (a valid surrogate pair) is fine', async () => {
    expect((await signed(t, game, 'POST', '/v1/server/create-order', orderBody({ combo_id: '😀' }))).status).toBe(200);
  });

  it('operator API: U+0000 in a body field or a path parameter -> 400', async () => {
    const r = await admin(t, 'POST', '/admin/v1/games', { game_id: 'nul-game', name: 'a\u0000b' });
    expect(r.status, r.text).toBe(400);
    expect(r.body.message).toContain('name');
    const p = await admin(t, 'GET', '/admin/v1/games/a%00b');
    expect(p.status, p.text).toBe(400);
    expect(p.body.message).toContain('%00');
    const q = await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/p%00x`, { name: 'p', price: 1, currency: 'CNY' });
    expect(q.status, q.text).toBe(400);
    expect(q.body.error).toBe('invalid_request');
    expect((await admin(t, 'GET', `/admin/v1/games/${game.gameId}/products`)).body.data.map((x: { product_id: string }) => x.product_id)).not.toContain('p\u0000x');
  });

  // A cursor is base64url JSON: U+0000 hidden in it passes the URL's %00 check, and PostgreSQL
  // would refuse it with a 500.
  it('operator listings: a cursor hiding U+0000 or a lone surrogate -> 400 naming the cursor', async () => {
    // JSON escapes (\\u0000), as a forger writes them: JSON.parse turns them into the characters.
    const forged = ['"a\\u0000"', '"\\ud800"', '[1,"g\\u0000","s"]', '[1,"g\\u0000","p","u"]', '[1,"g","s\\u0000"]', '{"a\\u0000":1}'].map((j) => Buffer.from(j).toString('base64url'));
    const listings = ['/admin/v1/games', '/admin/v1/partners', '/admin/v1/audit', '/admin/v1/sessions', '/admin/v1/bindings', '/admin/v1/orders', '/admin/v1/notifications'];
    for (const path of listings) {
      for (const cursor of forged) {
        const r = await admin(t, 'GET', `${path}?cursor=${cursor}`);
        expect([path, cursor, r.status, r.body.error]).toEqual([path, cursor, 400, 'invalid_request']);
        expect(r.body.message).toContain('cursor');
      }
    }
  });

  it('a "__proto__" field is ignored like any unknown field', async () => {
    const body = JSON.stringify(orderBody()).replace(/^\{/, '{"__proto__":{"quantity":5},"meta":{"__proto__":{"role_level":1}},');
    const r = await signed(t, game, 'POST', '/v1/server/create-order', body);
    expect(r.status, r.text).toBe(200);
    const stored = await t.service.database.db.selectFrom('orders').selectAll().where('order_id', '=', r.body.order_id).executeTakeFirstOrThrow();
    expect(stored.quantity).toBe(1);
    expect(stored.meta).toBeNull();
  });
});

// PROTOCOL 3: "quantity is an integer (JSON number with no fraction)". JSON.parse reads 2.0 as
// 2 and 1.0000000000000001 as 1, so these are checked as written.
describe('integers written with a fraction part', () => {
  let game: TestGame;
  beforeAll(async () => {
    game = await createGame(t);
  });
  /** The order body as text, with `literal` written as the value of `field` (top level or meta). */
  const withLiteral = (field: string, literal: string): string => {
    const marker = '"__LITERAL__"';
    const body = field.startsWith('meta.')
      ? orderBody({ meta: { role_id: 'r1', [field.slice(5)]: '__LITERAL__' } })
      : orderBody({ [field]: '__LITERAL__' });
    return JSON.stringify(body).replace(marker, literal);
  };

  it.each([
    ['quantity', '2.0'],
    ['quantity', '1.0000000000000001'],
    ['quantity', '1.5e1'],
    ['quantity', '100.00'],
    ['meta.role_level', '3.0'],
    ['meta.role_level', '-1.0'],
  ])('%s written as %s -> 400 naming the field, nothing stored', async (field, literal) => {
    const before = await storedRows(t, game.gameId);
    const r = await signed(t, game, 'POST', '/v1/server/create-order', withLiteral(field, literal));
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect(r.body.message).toBe(`${field} must be an integer, written without a fraction part (2, not 2.0)`);
    expect(await storedRows(t, game.gameId)).toEqual(before);
  });

  it.each([
    ['quantity', '2', 2],
    ['quantity', '1e2', 100],
    ['quantity', '2E0', 2],
    ['meta.role_level', '0', 0],
  ])('%s written as %s (no fraction part) is the integer %s', async (field, literal, value) => {
    const r = await signed(t, game, 'POST', '/v1/server/create-order', withLiteral(field, literal));
    expect(r.status, r.text).toBe(200);
    const stored = await t.service.database.db.selectFrom('orders').selectAll().where('order_id', '=', r.body.order_id).executeTakeFirstOrThrow();
    if (field === 'quantity') expect(stored.quantity).toBe(value);
    else expect(JSON.parse(stored.meta as string).role_level).toBe(value);
  });

  it('fractions elsewhere are not integers the schema wants: unknown fields, strings, an IP in context', async () => {
    const body = JSON.stringify(orderBody({ context: 'client 1.2.3 at 10.0.0.1', surprise: 2.5, nested: { quantity: 1.5 }, meta: { role_id: 'r', mood: 0.5 } }));
    const r = await signed(t, game, 'POST', '/v1/server/create-order', body);
    expect(r.status, r.text).toBe(200);
  });

  it('strings with quotes, backslashes and digit-dot-digit before the field do not hide it', async () => {
    for (const context of ['say "1.5" twice', 'ends with a backslash \\', 'v1.2 at 10.0.0.1 \\"3.4\\"']) {
      const body = JSON.stringify(orderBody({ context, quantity: '__LITERAL__' })).replace('"__LITERAL__"', '2.0');
      const r = await signed(t, game, 'POST', '/v1/server/create-order', body);
      expect([r.status, r.body.message], context).toEqual([400, 'quantity must be an integer, written without a fraction part (2, not 2.0)']);
    }
  });

  it('a key written with escapes is the same key: quan\\u0074ity 2.0 -> 400', async () => {
    const body = JSON.stringify(orderBody({ quantity: '__LITERAL__' })).replace('"quantity":"__LITERAL__"', '"quan\\u0074ity":2.0');
    const r = await signed(t, game, 'POST', '/v1/server/create-order', body);
    expect([r.status, r.body.message]).toEqual([400, 'quantity must be an integer, written without a fraction part (2, not 2.0)']);
  });

  // The check reads bodies from anyone (the client API needs no signature) before any other
  // check of their content: nesting and many fractions must not make it fail or stall.
  it.each([
    ['5,000 levels of arrays around 13,000 fractions', `{"order_token":"x","z":${'['.repeat(5000)}${Array(13000).fill('1.5').join(',')}${']'.repeat(5000)}}`],
    ['32,000 levels of arrays around one fraction', `{"order_token":"x","z":${'['.repeat(32000)}1.5${']'.repeat(32000)}}`],
    ['10,000 levels of objects', `{"order_token":"x",${'"a":{'.repeat(10000)}"b":1.5${'}'.repeat(10000)}}`],
  ])('a 64 KiB body of %s is answered as any other (401 invalid_token)', async (_n, body) => {
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(64 * 1024);
    const r = await fetch(`${t.url}/v1/client/order`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect([r.status, (await r.json()).error]).toEqual([401, 'invalid_token']);
  });

  it('the operator API too: a product price of 100.0 -> 400, nothing stored', async () => {
    const path = `/admin/v1/games/${game.gameId}/products/fraction-price`;
    const res = await fetch(t.url + path, {
      method: 'PUT',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: '{"name":"p","price":100.0,"currency":"CNY"}',
    });
    expect(res.status).toBe(400);
    expect((await res.json()).message).toBe('price must be an integer, written without a fraction part (2, not 2.0)');
    expect((await admin(t, 'GET', path)).status).toBe(404);
  });
});
