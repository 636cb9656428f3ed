import SQLite from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedRows } from './helpers/raw.js';
import pg from 'pg';
import { createTestDatabase, PG_ADMIN_URL, TEST_DB } from './helpers/db.js';
import { HangingRelay } from './helpers/hanging-relay.js';
import { waitFor } from './helpers/wait.js';
import { ADMIN_TOKEN, admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

/** Operator API for games, keys and products (PROTOCOL 11), key rotation, idempotency, health. */
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => t?.stop());

let seq = 0;
const newId = () => `adm_${process.pid}_${++seq}_${Date.now().toString(36)}`;
const CREATE = '/v1/server/create-order';

describe('games', () => {
  it('creates a game with the documented defaults and shows its secret only in the 201', async () => {
    const id = newId();
    const r = await admin(t, 'POST', '/admin/v1/games', { game_id: id, name: '测试游戏 🎮' });
    expect(r.status, r.text).toBe(201);
    expect(r.headers.get('x-trace-id')).toBeTruthy();
    expect(r.body).toMatchObject({
      game_id: id,
      name: '测试游戏 🎮',
      iap_enabled: true,
      // payments.md 1: a new game has no payment channel, sandbox included.
      sandbox_payments: false,
      order_ttl_seconds: 1800,
      gm_url: null,
      rate_limit_per_second: 1000,
      nppa: null,
    });
    expect(r.body.secret_key).toMatch(/^sk_[0-9A-Za-z]{43}$/);
    expect(r.body.key_ids).toEqual([r.body.key_id]);
    const secret = r.body.secret_key as string;

    const got = await admin(t, 'GET', `/admin/v1/games/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty('secret_key');
    expect(got.text).not.toContain(secret);
    expect(got.body.key_ids).toEqual([r.body.key_id]);

    const patched = await admin(t, 'PATCH', `/admin/v1/games/${id}`, { name: 'Renamed' });
    expect(patched.status).toBe(200);
    expect(patched.text).not.toContain(secret);
    expect(patched.body.name).toBe('Renamed');

    // The secret is not stored in the clear either.
    const keyRows = await t.service.database.db.selectFrom('game_keys').selectAll().where('game_id', '=', id).execute();
    expect(JSON.stringify(keyRows)).not.toContain(secret);
  });

  it('no secret is stored or echoed in the clear: game keys, national-system key, audit log', async () => {
    const id = newId();
    const secret = 'sk_clear_text_must_not_appear_0001';
    const nppaSecret = 'abcdef0123456789abcdef0123456789';
    expect((await admin(t, 'POST', '/admin/v1/games', { game_id: id, name: 'S', secret_key: secret })).status).toBe(201);
    const patched = await admin(t, 'PATCH', `/admin/v1/games/${id}`, { nppa: { app_id: 'app', biz_id: 'biz', secret_key: nppaSecret } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.nppa).toEqual({ app_id: 'app', biz_id: 'biz' });
    expect(patched.text).not.toContain(nppaSecret);
    const added = await admin(t, 'POST', `/admin/v1/games/${id}/keys`);
    const got = await admin(t, 'GET', `/admin/v1/games/${id}`);
    for (const s of [secret, nppaSecret, added.body.secret_key]) expect(got.text).not.toContain(s);
    const db = t.service.database.db;
    const rows = JSON.stringify([
      await db.selectFrom('games').selectAll().where('game_id', '=', id).execute(),
      await db.selectFrom('game_keys').selectAll().where('game_id', '=', id).execute(),
      await db.selectFrom('audit_log').selectAll().where('target', 'like', `${id}%`).execute(),
    ]);
    expect(rows).toContain(id);
    for (const s of [secret, nppaSecret, added.body.secret_key]) expect(rows).not.toContain(s);
  });

  it('uses a given secret_key, and signing with it works', async () => {
    const id = newId();
    const secret = 'sk_given_secret_key_0123456789';
    const r = await admin(t, 'POST', '/admin/v1/games', { game_id: id, name: 'Given', secret_key: secret });
    expect(r.status, r.text).toBe(201);
    expect(r.body.secret_key).toBe(secret);
    const g: TestGame = { gameId: id, secret, keyId: r.body.key_id };
    expect((await signed(t, g, 'POST', '/v1/server/enter-game', { combo_id: 'p', session_id: 's' })).status).toBe(200);
  });

  it('patches every setting and answers the new state', async () => {
    const g = await createGame(t);
    const r = await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, {
      sandbox_payments: false,
      order_ttl_seconds: 60,
      gm_url: 'https://gm.example.com/gm',
      rate_limit_per_second: 5,
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ sandbox_payments: false, order_ttl_seconds: 60, gm_url: 'https://gm.example.com/gm', rate_limit_per_second: 5 });
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body).toMatchObject({ order_ttl_seconds: 60 });
    const cleared = await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { gm_url: null });
    expect(cleared.body.gm_url).toBeNull();
    // The new order lifetime applies to the next order.
    const before = Math.floor(Date.now() / 1000);
    const o = await signed(t, g, 'POST', CREATE, orderBody());
    expect(o.body.expires_at).toBeGreaterThanOrEqual(before + 60);
    expect(o.body.expires_at).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 60);
  });

  it('iap_enabled false -> create-order 403 game_iap_disabled, stores nothing; true again -> 200', async () => {
    const g = await createGame(t);
    expect((await signed(t, g, 'POST', CREATE, orderBody())).status).toBe(200);
    expect((await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { iap_enabled: false })).body.iap_enabled).toBe(false);
    const before = await storedRows(t, g.gameId);
    const r = await signed(t, g, 'POST', CREATE, orderBody());
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('game_iap_disabled');
    expect(await storedRows(t, g.gameId)).toEqual(before);
    // Sessions are not affected by the IAP switch.
    expect((await signed(t, g, 'POST', '/v1/server/enter-game', { combo_id: 'p', session_id: 's' })).status).toBe(200);
    await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { iap_enabled: true });
    expect((await signed(t, g, 'POST', CREATE, orderBody())).status).toBe(200);
  });

  it('409 conflict for a duplicate game, also when created concurrently', async () => {
    const id = newId();
    expect((await admin(t, 'POST', '/admin/v1/games', { game_id: id, name: 'A' })).status).toBe(201);
    const dup = await admin(t, 'POST', '/admin/v1/games', { game_id: id, name: 'B' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toBe('conflict');
    const id2 = newId();
    const answers = await Promise.all(Array.from({ length: 8 }, () => admin(t, 'POST', '/admin/v1/games', { game_id: id2, name: 'C' })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    expect((await admin(t, 'GET', `/admin/v1/games/${id2}`)).body.key_ids).toHaveLength(1);
  });

  it.each([
    ['GET', '/admin/v1/games/no-such-game', undefined],
    ['PATCH', '/admin/v1/games/no-such-game', { name: 'x' }],
    ['POST', '/admin/v1/games/no-such-game/keys', undefined],
    ['DELETE', '/admin/v1/games/no-such-game/keys/key_1', undefined],
    ['PUT', '/admin/v1/games/no-such-game/products/p1', { name: 'p', price: 1, currency: 'CNY' }],
    ['GET', '/admin/v1/games/no-such-game/products/p1', undefined],
    ['GET', '/admin/v1/games/no-such-game/products', undefined],
  ])('404 not_found: %s %s', async (method, p, body) => {
    const r = await admin(t, method, p, body);
    expect(r.status, r.text).toBe(404);
    expect(r.body.error).toBe('not_found');
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
  });

  const g64 = 'g'.repeat(64);
  it.each([
    ['game_id missing', { name: 'x' }, 'game_id'],
    ['game_id empty', { game_id: '', name: 'x' }, 'game_id'],
    ['game_id 65 characters', { game_id: 'g'.repeat(65), name: 'x' }, 'game_id'],
    ['game_id with a slash', { game_id: 'a/b', name: 'x' }, 'game_id'],
    ['game_id starting with a dash', { game_id: '-ab', name: 'x' }, 'game_id'],
    ['game_id a number', { game_id: 42, name: 'x' }, 'game_id'],
    ['name missing', { game_id: 'ok' }, 'name'],
    ['name empty', { game_id: 'ok', name: '' }, 'name'],
    ['name 129 code points', { game_id: 'ok', name: '名'.repeat(129) }, 'name'],
    ['iap_enabled a string', { game_id: 'ok', name: 'x', iap_enabled: 'false' }, 'iap_enabled'],
    ['order_ttl_seconds 59', { game_id: 'ok', name: 'x', order_ttl_seconds: 59 }, 'order_ttl_seconds'],
    ['order_ttl_seconds 2592001', { game_id: 'ok', name: 'x', order_ttl_seconds: 2_592_001 }, 'order_ttl_seconds'],
    ['order_ttl_seconds 1800.5', { game_id: 'ok', name: 'x', order_ttl_seconds: 1800.5 }, 'order_ttl_seconds'],
    ['rate_limit_per_second 0', { game_id: 'ok', name: 'x', rate_limit_per_second: 0 }, 'rate_limit_per_second'],
    ['gm_url not http(s)', { game_id: 'ok', name: 'x', gm_url: 'ftp://gm.example.com/x' }, 'gm_url'],
    ['gm_url with a path starting with //', { game_id: 'ok', name: 'x', gm_url: 'https://gm.example.com//gm' }, 'gm_url'],
    ['gm_url with a % that starts no escape', { game_id: 'ok', name: 'x', gm_url: 'https://gm.example.com/g%m' }, 'gm_url'],
    ['gm_url with a password', { game_id: 'ok', name: 'x', gm_url: 'https://gmuser:gmpass@gm.example.com/gm' }, 'gm_url'],
    ['gm_url with a user name', { game_id: 'ok', name: 'x', gm_url: 'https://gmuser@gm.example.com/gm' }, 'gm_url'],
    ['secret_key without sk_', { game_id: 'ok', name: 'x', secret_key: 'abcdefghijklmnopqrstuvwxyz' }, 'secret_key'],
    ['secret_key too short', { game_id: 'ok', name: 'x', secret_key: 'sk_short' }, 'secret_key'],
  ])('create: 400 invalid_request naming the field when %s', async (_n, body, field) => {
    const r = await admin(t, 'POST', '/admin/v1/games', body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect(r.body.message).toContain(field);
    expect((await admin(t, 'GET', '/admin/v1/games/ok')).status).toBe(404);
  });

  it('create: bounds that are accepted (game_id 1 and 64, name 128 code points, ttl 60 and 2592000)', async () => {
    const one = `x${Date.now().toString(36).slice(-1)}`.slice(0, 1);
    for (const body of [
      { game_id: one, name: 'x' },
      { game_id: g64, name: '名'.repeat(128), order_ttl_seconds: 60 },
    ]) {
      const r = await admin(t, 'POST', '/admin/v1/games', body);
      expect([201, 409]).toContain(r.status);
    }
    const r = await admin(t, 'PATCH', `/admin/v1/games/${g64}`, { order_ttl_seconds: 2_592_000 });
    expect(r.status, r.text).toBe(200);
  });

  it.each([
    ['name empty', { name: '' }, 'name'],
    ['iap_enabled null', { iap_enabled: null }, 'iap_enabled'],
    ['order_ttl_seconds a string', { order_ttl_seconds: '60' }, 'order_ttl_seconds'],
    ['nppa secret_key not hex', { nppa: { app_id: 'a', biz_id: 'b', secret_key: 'zz' } }, 'nppa.secret_key'],
    ['gm_url with a password', { gm_url: 'https://gmuser:gmpass@gm.example.com/gm' }, 'gm_url'],
  ])('patch: 400 naming the field when %s', async (_n, body, field) => {
    const g = await createGame(t);
    const before = (await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body;
    const r = await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.message).toContain(field);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body).toEqual(before);
  });
});

describe('operator authentication', () => {
  it.each([
    ['no Authorization', undefined],
    ['a wrong token', `Bearer ${ADMIN_TOKEN}x`],
    ['a prefix of the token', `Bearer ${ADMIN_TOKEN.slice(0, -1)}`],
    ['the token in another case', `Bearer ${ADMIN_TOKEN.toUpperCase()}`],
    ['Basic', `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`],
    ['the bare token', ADMIN_TOKEN],
    ['Bearer and nothing', 'Bearer '],
    ['a request signature', 'SEAYOO-HMAC-SHA256 Game=x,Timestamp=20260101T000000Z,Signature=00'],
  ])('401 unauthorized with %s, and nothing changes', async (_n, auth) => {
    const id = newId();
    for (const [method, p, body] of [
      ['POST', '/admin/v1/games', { game_id: id, name: 'x' }],
      ['GET', `/admin/v1/games/${id}`, undefined],
      ['GET', `/admin/v1/games/${id}/products`, undefined],
    ] as const) {
      const res = await fetch(t.url + p, {
        method,
        headers: { ...(auth ? { authorization: auth } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.headers.get('x-trace-id')).toBeTruthy();
      expect((await res.json()).error).toBe('unauthorized');
    }
    expect((await admin(t, 'GET', `/admin/v1/games/${id}`)).status).toBe(404);
  });

  it.each([
    ['the scheme in lower case', `bearer ${ADMIN_TOKEN}`],
    ['the scheme in upper case', `BEARER ${ADMIN_TOKEN}`],
    ['a tab after the scheme', `Bearer\t${ADMIN_TOKEN}`],
  ])('accepts the token with %s (schemes are case-insensitive, RFC 9110 11.1)', async (_n, auth) => {
    const res = await fetch(`${t.url}/admin/v1/orders?limit=1`, { headers: { authorization: auth } });
    expect(res.status).toBe(200);
  });

  it('the operator token is not accepted on the server API', async () => {
    const res = await fetch(t.url + CREATE, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(orderBody()) });
    expect(res.status).toBe(401);
    expect((await res.json()).error).toBe('invalid_signature');
  });
});

describe('products', () => {
  it('put, get, list, replace, deactivate', async () => {
    const g = await createGame(t); // has gem_60
    const path = `/admin/v1/games/${g.gameId}/products`;
    const put = await admin(t, 'PUT', `${path}/vip_月卡`.replace('月卡', encodeURIComponent('月卡')), { name: '月卡', price: 3000, currency: 'CNY' });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ game_id: g.gameId, product_id: 'vip_月卡', name: '月卡', price: 3000, currency: 'CNY', active: true });
    const got = await admin(t, 'GET', `${path}/${encodeURIComponent('vip_月卡')}`);
    expect(got.body).toEqual(put.body);
    const list = await admin(t, 'GET', path);
    expect(list.body.data.map((p: { product_id: string }) => p.product_id)).toEqual(['gem_60', 'vip_月卡']);

    for (const currency of ['JPY', 'EUR', 'HKD', 'TWD', 'KRW']) expect((await admin(t, 'PUT', `${path}/in_${currency}`, { name: currency, price: 100, currency })).status).toBe(200);
    const replaced = await admin(t, 'PUT', `${path}/gem_60`, { name: '60 gems+', price: 648, currency: 'USD' });
    expect(replaced.body).toMatchObject({ name: '60 gems+', price: 648, currency: 'USD', active: true });
    const original = list.body.data[0];
    expect(replaced.body.created_at).toBe(original.created_at);
    expect(replaced.body.updated_at).toBeGreaterThanOrEqual(original.updated_at);

    // The order stores amount = price * quantity in the product's currency.
    const o = await signed(t, g, 'POST', CREATE, orderBody({ quantity: 3 }));
    expect(o.status).toBe(200);
    const row = await t.service.database.db.selectFrom('orders').selectAll().where('order_id', '=', o.body.order_id).executeTakeFirstOrThrow();
    expect([row.amount, row.currency]).toEqual([1944, 'USD']);

    expect((await admin(t, 'PUT', `${path}/gem_60`, { name: 'off', price: 1, currency: 'CNY', active: false })).body.active).toBe(false);
    const inactive = await signed(t, g, 'POST', CREATE, orderBody());
    expect(inactive.status).toBe(400);
    expect(inactive.body.message).toContain('product_id');
  });

  it('the listing refuses a query parameter it does not know (it has no filter and no paging)', async () => {
    const g = await createGame(t);
    for (const q of ['active=true', 'limit=1&cursor=zzz']) {
      const r = await admin(t, 'GET', `/admin/v1/games/${g.gameId}/products?${q}`);
      expect([q, r.status, r.body.error]).toEqual([q, 400, 'invalid_request']);
      expect(r.body.message).toMatch(/is not a known parameter/);
    }
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}/products`)).status).toBe(200);
  });

  it('404 for an unknown product of a known game', async () => {
    const g = await createGame(t);
    const r = await admin(t, 'GET', `/admin/v1/games/${g.gameId}/products/nope`);
    expect(r.status).toBe(404);
    expect(r.body.error).toBe('not_found');
  });

  it.each([
    ['name missing', { price: 1, currency: 'CNY' }, 'name'],
    ['name empty', { name: '', price: 1, currency: 'CNY' }, 'name'],
    ['price missing', { name: 'p', currency: 'CNY' }, 'price'],
    ['price 0', { name: 'p', price: 0, currency: 'CNY' }, 'price'],
    ['price -1', { name: 'p', price: -1, currency: 'CNY' }, 'price'],
    ['price 1.5', { name: 'p', price: 1.5, currency: 'CNY' }, 'price'],
    ['price a string', { name: 'p', price: '600', currency: 'CNY' }, 'price'],
    ['currency lower case', { name: 'p', price: 1, currency: 'cny' }, 'currency'],
    ['currency 4 letters', { name: 'p', price: 1, currency: 'CNYY' }, 'currency'],
    ['currency not ISO 4217', { name: 'p', price: 1, currency: 'ZZZ' }, 'currency must be an ISO 4217 currency code'],
    ['active a string', { name: 'p', price: 1, currency: 'CNY', active: 'yes' }, 'active'],
  ])('400 naming the field when %s', async (_n, body, field) => {
    const g = await createGame(t);
    const r = await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/products/new_one`, body);
    expect(r.status, r.text).toBe(400);
    expect(r.body.message).toContain(field);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}/products/new_one`)).status).toBe(404);
  });

  it('product_id bounds in the path: 64 code points accepted, 65 refused naming product_id', async () => {
    const g = await createGame(t);
    const ok = await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/products/${encodeURIComponent('😀'.repeat(64))}`, { name: 'p', price: 1, currency: 'CNY' });
    expect(ok.status, ok.text).toBe(200);
    const bad = await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/products/${encodeURIComponent('😀'.repeat(65))}`, { name: 'p', price: 1, currency: 'CNY' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('product_id');
  });
});

describe('signing keys: rotation', () => {
  it('two keys both sign; a third is 409; the deleted old key is refused; the last key cannot go', async () => {
    const g = await createGame(t);
    const old = g;
    const created = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`);
    expect(created.status, created.text).toBe(201);
    expect(created.body.secret_key).toMatch(/^sk_[0-9A-Za-z]{43}$/);
    expect(created.body.secret_key).not.toBe(old.secret);
    const fresh: TestGame = { gameId: g.gameId, secret: created.body.secret_key, keyId: created.body.key_id };
    const game = await admin(t, 'GET', `/admin/v1/games/${g.gameId}`);
    expect(game.body.key_ids.sort()).toEqual([old.keyId, fresh.keyId].sort());
    expect(game.text).not.toContain(fresh.secret);

    for (const k of [old, fresh]) expect((await signed(t, k, 'POST', CREATE, orderBody())).status).toBe(200);

    const third = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`);
    expect(third.status).toBe(409);
    expect(third.body.error).toBe('conflict');
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.key_ids).toHaveLength(2);

    const del = await admin(t, 'DELETE', `/admin/v1/games/${g.gameId}/keys/${old.keyId}`);
    expect(del.status, del.text).toBe(200);
    const refused = await signed(t, old, 'POST', CREATE, orderBody());
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe('invalid_signature');
    expect((await signed(t, fresh, 'POST', CREATE, orderBody())).status).toBe(200);

    const last = await admin(t, 'DELETE', `/admin/v1/games/${g.gameId}/keys/${fresh.keyId}`);
    expect(last.status).toBe(409);
    expect(last.body.error).toBe('conflict');
    expect((await signed(t, fresh, 'POST', CREATE, orderBody())).status).toBe(200);

    const unknown = await admin(t, 'DELETE', `/admin/v1/games/${g.gameId}/keys/${old.keyId}`);
    expect(unknown.status).toBe(404);
  });

  // A new key is always generated: a body field (a secret the operator meant to set) must not
  // pass as a success that ignored it.
  it('a new key takes no body, or {}: any field is 400 naming it, and no key is added', async () => {
    const g = await createGame(t);
    const keysOf = async () => (await t.service.database.db.selectFrom('game_keys').select('key_id').where('game_id', '=', g.gameId).execute()).length;
    for (const body of [{ secret_key: 'sk_mychosenkey0123456789abcdef' }, { x: 1 }]) {
      const r = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`, body);
      expect([r.status, r.body.error]).toEqual([400, 'invalid_request']);
      expect(r.body.message).toContain(Object.keys(body)[0]);
    }
    expect(await keysOf()).toBe(1);
    expect((await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`, {})).status).toBe(201);
    expect(await keysOf()).toBe(2);
  });

  it('concurrent key creations never leave more than two keys', async () => {
    const g = await createGame(t);
    const answers = await Promise.all(Array.from({ length: 6 }, () => admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`)));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.key_ids).toHaveLength(2);
  });

  it('concurrent deletion of both keys never leaves a game without a key', async () => {
    const g = await createGame(t);
    const k2 = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`);
    const answers = await Promise.all([g.keyId, k2.body.key_id].map((k) => admin(t, 'DELETE', `/admin/v1/games/${g.gameId}/keys/${k}`)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.key_ids).toHaveLength(1);
  });

  it('a key of one game does not sign for another', async () => {
    const a = await createGame(t);
    const b = await createGame(t);
    const r = await signed(t, { ...b, secret: a.secret }, 'POST', CREATE, orderBody());
    expect(r.status).toBe(401);
  });
});

describe('idempotency', () => {
  it('a replay answers the same order_id, order_token and expires_at; defaults count as given', async () => {
    const g = await createGame(t);
    const body = orderBody({ meta: { role_name: '剑客', role_level: 3 }, context: 'c' });
    const a = await signed(t, g, 'POST', CREATE, body);
    expect(a.status).toBe(200);
    for (const again of [body, { ...body, quantity: 1 }, { ...body, unknown: true }, { ...body, meta: { ...(body.meta as object), zone_id: '' } }]) {
      const r = await signed(t, g, 'POST', CREATE, again);
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual(a.body);
    }
    expect((await storedRows(t, g.gameId)).orders).toBe(1);
  });

  it.each([
    ['combo_id', { combo_id: 'other' }],
    ['product_id', { product_id: 'gem_61' }],
    ['platform', { platform: 'android' }],
    ['notify_url', { notify_url: 'https://game.example.com/other' }],
    ['quantity', { quantity: 2 }],
    ['meta', { meta: { role_name: '刺客' } }],
    ['context', { context: 'other' }],
  ])('the same reference_id with a different %s -> 422, nothing stored', async (_n, change) => {
    const g = await createGame(t);
    await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/products/gem_61`, { name: 'p', price: 1, currency: 'CNY' });
    const body = orderBody({ meta: { role_name: '剑客' }, context: 'c' });
    expect((await signed(t, g, 'POST', CREATE, body)).status).toBe(200);
    const r = await signed(t, g, 'POST', CREATE, { ...body, ...change });
    expect(r.status).toBe(422);
    expect(r.body.error).toBe('duplicate_reference_id');
    expect(r.body.message).toContain('reference_id');
    expect((await storedRows(t, g.gameId)).orders).toBe(1);
  });

  it('the same reference_id in two games is two orders', async () => {
    const a = await createGame(t);
    const b = await createGame(t);
    const body = orderBody();
    const ra = await signed(t, a, 'POST', CREATE, body);
    const rb = await signed(t, b, 'POST', CREATE, body);
    expect(ra.status).toBe(200);
    expect(rb.status).toBe(200);
    expect(ra.body.order_id).not.toBe(rb.body.order_id);
  });

  it('concurrent requests with one reference_id and different parameters: one order, the rest 422', async () => {
    const g = await createGame(t);
    const ref = orderBody().reference_id;
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => signed(t, g, 'POST', CREATE, orderBody({ reference_id: ref, quantity: i + 1 }))));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, ...Array(9).fill(422)]);
    expect((await storedRows(t, g.gameId)).orders).toBe(1);
  });

  it('20 concurrent identical enter-game reports open one session', async () => {
    const g = await createGame(t);
    const body = { combo_id: 'p-1', session_id: 'sess-concurrent' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => signed(t, g, 'POST', '/v1/server/enter-game', body)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect((await storedRows(t, g.gameId)).sessions).toBe(1);
    const row = await t.service.database.db.selectFrom('sessions').selectAll().where('game_id', '=', g.gameId).executeTakeFirstOrThrow();
    expect(row.left_at).toBeNull();
  });

  it('20 concurrent identical leave-game reports of an unknown session store one leave', async () => {
    const g = await createGame(t);
    const body = { combo_id: 'p-2', session_id: 'sess-leave-concurrent' };
    const answers = await Promise.all(Array.from({ length: 20 }, () => signed(t, g, 'POST', '/v1/server/leave-game', body)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect((await storedRows(t, g.gameId)).sessions).toBe(1);
  });
});

describe('health', () => {
  it('/healthz answers 200 ok and /readyz 200 ready', async () => {
    const h = await fetch(`${t.url}/healthz`);
    expect(h.status).toBe(200);
    expect(await h.json()).toEqual({ status: 'ok' });
    expect(h.headers.get('x-trace-id')).toBeTruthy();
    const r = await fetch(`${t.url}/readyz`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ready' });
  });

  it.skipIf(TEST_DB !== 'postgres')('/readyz answers 503 within 2 s when PostgreSQL takes connections but never answers', async () => {
    const tdb = await createTestDatabase();
    const relay = await new HangingRelay(new URL(tdb.url)).start();
    const viaRelay = new URL(tdb.url);
    viaRelay.host = `127.0.0.1:${relay.port}`;
    const s = await startService({ db: { url: viaRelay.toString(), drop: () => tdb.drop() } });
    try {
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
      relay.hang();
      const started = Date.now();
      const r = await fetch(`${s.url}/readyz`);
      expect(r.status).toBe(503);
      expect((await r.json()).message).toMatch(/did not answer within 2000 ms/);
      expect(Date.now() - started).toBeLessThan(10_000); // it answered; before, it hung
    } finally {
      relay.resume();
      await s.stop();
      await relay.close();
      await tdb.drop();
    }
  });

  it.skipIf(TEST_DB !== 'postgres')('/readyz answers 503 once the database is replaced by an empty one (migrations pending)', async () => {
    const s = await startService();
    try {
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
      const name = new URL(s.db.url).pathname.slice(1);
      const pgAdmin = new pg.Client({ connectionString: PG_ADMIN_URL });
      await pgAdmin.connect();
      await pgAdmin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await pgAdmin.query(`CREATE DATABASE ${name}`);
      await pgAdmin.end();
      const r = await waitFor(async () => {
        const a = await fetch(`${s.url}/readyz`);
        const body = await a.json();
        return a.status === 503 && /migrations are pending/.test(body.message) ? body : null;
      }, 'readyz to see the empty database');
      expect(r.error).toBe('service_unavailable');
      // Requests too: 503 (retryable), not 500, while the tables are missing.
      const list = await admin(s, 'GET', '/admin/v1/games');
      expect([list.status, list.body.error]).toEqual([503, 'service_unavailable']);
    } finally {
      await s.stop();
    }
  });

  it.skipIf(TEST_DB !== 'postgres')('/readyz answers 503 service_unavailable once the PostgreSQL database is gone; /healthz stays 200', async () => {
    const s = await startService();
    try {
      expect((await fetch(`${s.url}/readyz`)).status).toBe(200);
      const game = await createGame(s);
      s.service.games.invalidate(game.gameId); // the signature check must reach the database
      await s.db.drop(); // DROP DATABASE ... WITH (FORCE): every connection is cut
      const r = await fetch(`${s.url}/readyz`);
      expect(r.status).toBe(503);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      const body = await r.json();
      expect(body.error).toBe('service_unavailable');
      expect(body.message).not.toMatch(/postgres:\/\//);
      expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
      // A request that needs the database answers 503 service_unavailable (storage
      // unreachable, PROTOCOL 2), retryable, without leaking driver or SQL details.
      const a = await fetch(`${s.url}/admin/v1/games/x`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(a.status).toBe(503);
      const ab = await a.json();
      expect(ab.error).toBe('service_unavailable');
      expect(ab.message).not.toMatch(/select|t_[0-9a-z]+_|3D000/i);
      const o = await signed(s, game, 'POST', CREATE, orderBody());
      expect(o.status, o.text).toBe(503);
      expect(o.body.error).toBe('service_unavailable');
    } finally {
      await s.stop();
    }
  });

  it.skipIf(TEST_DB !== 'sqlite')('a write while another process holds the SQLite write lock past busy_timeout answers 503, not 500', async () => {
    const s = await startService();
    const game = await createGame(s);
    const other = new SQLite(s.db.url.slice('sqlite:'.length));
    try {
      other.exec('BEGIN IMMEDIATE');
      const r = await signed(s, game, 'POST', CREATE, orderBody());
      expect(r.status, r.text).toBe(503);
      expect(r.body.error).toBe('service_unavailable');
      other.exec('ROLLBACK');
      expect((await signed(s, game, 'POST', CREATE, orderBody())).status).toBe(200);
    } finally {
      other.close();
      await s.stop();
    }
  });
});

describe('GET /admin/v1/games', () => {
  it('lists every game in id order with its key ids and no secret, paged without gaps or repeats', async () => {
    const mine = [await createGame(t), await createGame(t), await createGame(t)];
    const rotated = await admin(t, 'POST', `/admin/v1/games/${mine[1]!.gameId}/keys`, {});
    expect(rotated.status).toBe(201);
    const seen: Record<string, any>[] = [];
    let cursor: string | null = null;
    do {
      const r = await admin(t, 'GET', `/admin/v1/games?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data);
      cursor = r.body.next_cursor;
    } while (cursor);
    const ids = seen.map((g) => g.game_id as string);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    for (const g of mine) expect(ids).toContain(g.gameId);
    const second = seen.find((g) => g.game_id === mine[1]!.gameId)!;
    expect(second).toEqual((await admin(t, 'GET', `/admin/v1/games/${mine[1]!.gameId}`)).body);
    expect(second.key_ids).toEqual([rotated.body.key_id, mine[1]!.keyId]);
    expect(JSON.stringify(seen)).not.toMatch(/sk_|secret/);
  });

  it('checks limit and cursor, and needs the admin token', async () => {
    expect((await admin(t, 'GET', '/admin/v1/games')).body.data.length).toBeLessThanOrEqual(50);
    for (const q of ['limit=0', 'limit=201', 'limit=x', 'cursor=%25%25%25']) {
      const r = await admin(t, 'GET', `/admin/v1/games?${q}`);
      expect([q, r.status, r.body.error]).toEqual([q, 400, 'invalid_request']);
    }
    expect((await fetch(`${t.url}/admin/v1/games`)).status).toBe(401);
    // Another listing's cursor (an id too) is not a games cursor, and a games cursor is not a partners one.
    await createGame(t);
    const audit = await admin(t, 'GET', '/admin/v1/audit?limit=1');
    const games = await admin(t, 'GET', '/admin/v1/games?limit=1');
    expect((await admin(t, 'GET', `/admin/v1/games?cursor=${audit.body.next_cursor}`)).status).toBe(400);
    expect((await admin(t, 'GET', `/admin/v1/partners?cursor=${games.body.next_cursor}`)).status).toBe(400);
    expect((await admin(t, 'GET', `/admin/v1/games?cursor=${games.body.next_cursor}`)).status).toBe(200);
  });
});

describe('unknown fields in operator API bodies', () => {
  // A misspelt field (iap_enable for iap_enabled) must not pass as a successful change: every
  // operator body refuses fields it does not know, with 400 naming the field, and changes
  // nothing. (create-order ignores unknown fields, as PROTOCOL 3 asks.)
  let game: TestGame;
  beforeAll(async () => {
    game = await createGame(t);
  });

  const cases: [string, string, Record<string, unknown>, string][] = [
    ['POST', '/admin/v1/games', { game_id: 'unknown-fields', name: 'x', iap_enable: false }, 'iap_enable'],
    ['PATCH', '/admin/v1/games/{game}', { iap_enable: false }, 'iap_enable'],
    ['PATCH', '/admin/v1/games/{game}', { nppa: { app_id: 'a', biz_id: 'b', secret_key: 'a'.repeat(32), secret: 'x' } }, 'nppa.secret'],
    ['PUT', '/admin/v1/games/{game}/products/gem_60', { name: 'x', price: 1, currency: 'CNY', enabled: false }, 'enabled'],
    ['POST', '/admin/v1/partners', { partner_id: 'unknown-fields', name: 'x', games: [], rate: 5 }, 'rate'],
    ['PATCH', '/admin/v1/partners/no-such-partner', { disabled: true }, 'disabled'],
    ['PUT', '/admin/v1/games/{game}/players/c1', { banned: true, reason: 'x' }, 'reason'],
    ['POST', '/admin/v1/orders/123/refund', { reason: 'x', notify: false }, 'notify'],
    ['POST', '/admin/v1/orders/123/cancel', { why: 'x' }, 'why'],
    ['POST', '/admin/v1/notifications/n1/redeliver', { force: true }, 'force'],
    ['POST', '/admin/v1/games/{game}/notifications/redeliver', { since: 0, status: 'failed' }, 'status'],
  ];

  it.each(cases)('%s %s: 400 naming the field', async (method, path, body, field) => {
    const r = await admin(t, method, path.replace('{game}', game.gameId), body);
    expect([r.status, r.body.error]).toEqual([400, 'invalid_request']);
    expect(r.body.message).toContain(`${field} is not a known field`);
  });

  it('changes nothing', async () => {
    const before = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).body;
    expect((await admin(t, 'PATCH', `/admin/v1/games/${game.gameId}`, { iap_enable: false, name: 'renamed' })).status).toBe(400);
    expect((await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).body).toEqual(before);
    const audit = await admin(t, 'GET', `/admin/v1/audit?target=${game.gameId}&action=game.update`);
    expect(audit.body.data).toEqual([]);
  });
});
