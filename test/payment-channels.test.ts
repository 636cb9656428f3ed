import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeAppleChain } from './helpers/apple.js';
import { admin, createGame, startService, type TestService } from './helpers/service.js';
import { createOrder, pay, paymentsOf, statusOf } from './helpers/orders.js';

/** Channel settings (payments.md 2): per game, secrets sealed and write-only, sandbox off for new games. */
let t: TestService;
let bare: TestService;
const chain = makeAppleChain();
const PRIVATE_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const google = { enabled: true, package_name: 'com.example.game', service_account: { client_email: 'pay@example.iam.gserviceaccount.com', private_key: PRIVATE_KEY } };
const apple = { enabled: true, bundle_id: 'com.example.game', app_apple_id: 1234567890 };
const channelUrl = (gameId: string, channel: string) => `/admin/v1/games/${gameId}/channels/${channel}`;

beforeAll(async () => {
  t = await startService({ env: { APPLE_ROOT_CERTS: `${chain.rootPem},${chain.rootDer}`, PUBLIC_BASE_URL: 'https://pay.example.com' } });
  // Without APPLE_ROOT_CERTS.
  bare = await startService();
});
afterAll(async () => {
  await t?.stop();
  await bare?.stop();
});

/** A game made as an operator makes one: no channel asked for. */
async function newGame(s: TestService): Promise<string> {
  const id = `ch_${Math.random().toString(36).slice(2, 10)}`;
  expect((await admin(s, 'POST', '/admin/v1/games', { game_id: id, name: 'New' })).status).toBe(201);
  expect((await admin(s, 'PUT', `/admin/v1/games/${id}/products/gem_60`, { name: 'gems', price: 600, currency: 'CNY' })).status).toBe(200);
  return id;
}

describe('a new game', () => {
  it('has no channel: sandbox_payments false, no channels listed, and paying through sandbox is 403 channel_unavailable', async () => {
    const gameId = await newGame(t);
    expect((await admin(t, 'GET', `/admin/v1/games/${gameId}`)).body.sandbox_payments).toBe(false);
    expect((await admin(t, 'GET', `/admin/v1/games/${gameId}/channels`)).body).toEqual({ data: [] });
    const secret = (await admin(t, 'POST', `/admin/v1/games/${gameId}/keys`)).body;
    expect(secret.secret_key).toBeTruthy();
    const o = await createOrder(t, { gameId, secret: secret.secret_key, keyId: secret.key_id });
    const r = await pay(t, o.order_token);
    expect([r.status, r.body.error]).toEqual([403, 'channel_unavailable']);
    expect(await statusOf(t, o.order_id)).toBe('created');
    expect(await paymentsOf(t, o.order_id)).toEqual([]);
  });

  it('created with sandbox_payments true has the sandbox channel enabled', async () => {
    const g = await createGame(t);
    expect((await admin(t, 'GET', channelUrl(g.gameId, 'sandbox'))).body).toMatchObject({ game_id: g.gameId, channel: 'sandbox', enabled: true, callback_url: null });
  });
});

describe('the games API sandbox_payments is a view of the sandbox channel', () => {
  it('PATCH sandbox_payments writes the channel; PUT of the channel shows in the game', async () => {
    const g = await createGame(t, { sandbox_payments: false });
    expect((await admin(t, 'GET', channelUrl(g.gameId, 'sandbox'))).status).toBe(404);
    expect((await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { sandbox_payments: true })).body.sandbox_payments).toBe(true);
    expect((await admin(t, 'GET', channelUrl(g.gameId, 'sandbox'))).body.enabled).toBe(true);
    const o = await createOrder(t, g);
    expect((await pay(t, o.order_token)).body.status).toBe('paid');

    expect((await admin(t, 'PUT', channelUrl(g.gameId, 'sandbox'), { enabled: false })).status).toBe(200);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.sandbox_payments).toBe(false);
    const list = await admin(t, 'GET', '/admin/v1/games?limit=200');
    expect(list.body.data.find((x: { game_id: string }) => x.game_id === g.gameId).sandbox_payments).toBe(false);
    const o2 = await createOrder(t, g);
    expect((await pay(t, o2.order_token)).status).toBe(403);

    expect((await admin(t, 'DELETE', channelUrl(g.gameId, 'sandbox'))).status).toBe(200);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.sandbox_payments).toBe(false);
    expect((await admin(t, 'DELETE', channelUrl(g.gameId, 'sandbox'))).status).toBe(404);
  });
});

describe('channel settings', () => {
  it('apple: set, shown with its callback_url and defaults, listed, removed', async () => {
    const g = await createGame(t);
    const put = await admin(t, 'PUT', channelUrl(g.gameId, 'apple'), apple);
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      game_id: g.gameId,
      channel: 'apple',
      enabled: true,
      bundle_id: 'com.example.game',
      app_apple_id: 1234567890,
      accept_sandbox: true,
      callback_url: `https://pay.example.com/v1/callbacks/apple/${g.gameId}`,
    });
    expect((await admin(t, 'GET', channelUrl(g.gameId, 'apple'))).body).toEqual(put.body);
    const list = await admin(t, 'GET', `/admin/v1/games/${g.gameId}/channels`);
    expect(list.body.data.map((c: { channel: string }) => c.channel)).toEqual(['apple', 'sandbox']);
    const replaced = await admin(t, 'PUT', channelUrl(g.gameId, 'apple'), { enabled: false, bundle_id: 'com.example.other', accept_sandbox: false });
    expect(replaced.body).toMatchObject({ enabled: false, bundle_id: 'com.example.other', accept_sandbox: false, created_at: put.body.created_at });
    expect(replaced.body).not.toHaveProperty('app_apple_id');
    expect((await admin(t, 'DELETE', channelUrl(g.gameId, 'apple'))).status).toBe(200);
    expect((await admin(t, 'GET', channelUrl(g.gameId, 'apple'))).status).toBe(404);
  });

  it('apple cannot be enabled without APPLE_ROOT_CERTS (400 that says so); it can be stored disabled', async () => {
    const g = await createGame(bare);
    const r = await admin(bare, 'PUT', channelUrl(g.gameId, 'apple'), apple);
    expect([r.status, r.body.error]).toEqual([400, 'invalid_request']);
    expect(r.body.message).toContain('APPLE_ROOT_CERTS');
    expect((await admin(bare, 'PUT', channelUrl(g.gameId, 'apple'), { ...apple, enabled: false })).status).toBe(200);
  });

  it("google: the service account's private key is sealed at rest, never returned, *** in the audit log", async () => {
    const g = await createGame(t);
    const put = await admin(t, 'PUT', channelUrl(g.gameId, 'google'), { ...google, push_audience: 'https://pay.example.com/push' });
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({
      channel: 'google',
      package_name: 'com.example.game',
      service_account: { client_email: google.service_account.client_email, private_key: '***' },
      accept_sandbox: true,
      push_audience: 'https://pay.example.com/push',
      callback_url: `https://pay.example.com/v1/callbacks/google/${g.gameId}`,
    });
    const body = PRIVATE_KEY.split('\n')[1]!;
    for (const r of [put, await admin(t, 'GET', channelUrl(g.gameId, 'google')), await admin(t, 'GET', `/admin/v1/games/${g.gameId}/channels`)]) expect(r.text).not.toContain(body);
    const row = await t.service.database.db.selectFrom('game_channels').selectAll().where('game_id', '=', g.gameId).where('channel', '=', 'google').executeTakeFirstOrThrow();
    expect(row.secrets_enc).toMatch(/^v2:/);
    expect(JSON.stringify(row)).not.toContain(body);
    const audit = await admin(t, 'GET', `/admin/v1/audit?action=game.channel.put&target=${g.gameId}/google`);
    expect(audit.body.data).toHaveLength(1);
    expect(audit.body.data[0].detail.service_account.private_key).toBe('***');
    expect(JSON.stringify(audit.body)).not.toContain(body);
    // The payment paths see the key itself.
    expect((await t.service.channels.forGame(g.gameId)).get('google')?.settings).toMatchObject({ service_account: { private_key: PRIVATE_KEY } });
  });

  it('404 for an unknown game; GET and DELETE of an unknown channel are 404', async () => {
    expect((await admin(t, 'PUT', channelUrl('no_such_game', 'sandbox'), { enabled: true })).status).toBe(404);
    expect((await admin(t, 'GET', '/admin/v1/games/no_such_game/channels')).status).toBe(404);
    const g = await createGame(t);
    expect((await admin(t, 'GET', channelUrl(g.gameId, 'paypal'))).status).toBe(404);
    expect((await admin(t, 'DELETE', channelUrl(g.gameId, 'paypal'))).status).toBe(404);
  });

  const long = (n: number) => 'a'.repeat(n);
  const bad: [string, string, Record<string, unknown>][] = [
    ['sandbox', 'enabled missing', {}],
    ['sandbox', 'enabled a string', { enabled: 'true' }],
    ['sandbox', 'an unknown field', { enabled: true, extra: 1 }],
    ['apple', 'bundle_id missing', { enabled: false }],
    ['apple', 'bundle_id empty', { enabled: false, bundle_id: '' }],
    ['apple', 'bundle_id 156 chars', { enabled: false, bundle_id: long(156) }],
    ['apple', 'bundle_id with a space', { enabled: false, bundle_id: 'com.example game' }],
    ['apple', 'app_apple_id 0', { enabled: false, bundle_id: 'a', app_apple_id: 0 }],
    ['apple', 'app_apple_id a string', { enabled: false, bundle_id: 'a', app_apple_id: '123' }],
    ['apple', 'app_apple_id above the bound', { enabled: false, bundle_id: 'a', app_apple_id: 1_000_000_000_000 }],
    ['apple', 'accept_sandbox a string', { enabled: false, bundle_id: 'a', accept_sandbox: 'yes' }],
    ['google', 'package_name one segment', { ...google, package_name: 'game' }],
    ['google', 'package_name 256 chars', { ...google, package_name: `a.${long(254)}` }],
    ['google', 'service_account missing', { enabled: true, package_name: 'com.a.b' }],
    ['google', 'private_key not PEM', { ...google, service_account: { ...google.service_account, private_key: long(100) } }],
    ['google', 'private_key 8193 chars', { ...google, service_account: { ...google.service_account, private_key: `-----BEGIN PRIVATE KEY-----${long(8193 - 27)}` } }],
    ['google', 'client_email without @', { ...google, service_account: { ...google.service_account, client_email: 'nobody' } }],
    ['google', 'token_uri not a URL', { ...google, service_account: { ...google.service_account, token_uri: 'not a url' } }],
    ['google', 'push_audience empty', { ...google, push_audience: '' }],
    ['google', 'push_audience 1025 chars', { ...google, push_audience: long(1025) }],
  ];
  it.each(bad)('%s: 400 for %s', async (channel, _what, body) => {
    const g = await createGame(t);
    const r = await admin(t, 'PUT', channelUrl(g.gameId, channel), body);
    expect([r.status, r.body.error], r.text).toEqual([400, 'invalid_request']);
  });

  it('accepts the bounds themselves', async () => {
    const g = await createGame(t);
    expect((await admin(t, 'PUT', channelUrl(g.gameId, 'apple'), { enabled: false, bundle_id: long(155), app_apple_id: 999_999_999_999 })).status).toBe(200);
    expect((await admin(t, 'PUT', channelUrl(g.gameId, 'apple'), { enabled: false, bundle_id: 'a', app_apple_id: 1 })).status).toBe(200);
    expect((await admin(t, 'PUT', channelUrl(g.gameId, 'google'), { ...google, package_name: `a.${long(253)}`, push_audience: long(1024) })).status).toBe(200);
  });
});

describe('store product ids', () => {
  it('a product keeps its App Store and Play ids; {} when none; bounds', async () => {
    const g = await createGame(t);
    const url = `/admin/v1/games/${g.gameId}/products/gem_120`;
    const put = await admin(t, 'PUT', url, { name: 'gems', price: 1200, currency: 'CNY', store_product_ids: { apple: 'com.example.gems120', google: 'gems_120' } });
    expect(put.body.store_product_ids).toEqual({ apple: 'com.example.gems120', google: 'gems_120' });
    expect((await admin(t, 'GET', url)).body.store_product_ids).toEqual({ apple: 'com.example.gems120', google: 'gems_120' });
    expect((await admin(t, 'PUT', url, { name: 'gems', price: 1200, currency: 'CNY' })).body.store_product_ids).toEqual({});
    for (const ids of [{ apple: '' }, { apple: 'a'.repeat(151) }, { google: 'with space' }, { amazon: 'x' }]) {
      const r = await admin(t, 'PUT', url, { name: 'gems', price: 1200, currency: 'CNY', store_product_ids: ids });
      expect([JSON.stringify(ids), r.status]).toEqual([JSON.stringify(ids), 400]);
    }
    expect((await admin(t, 'PUT', url, { name: 'gems', price: 1200, currency: 'CNY', store_product_ids: { apple: 'a'.repeat(150) } })).status).toBe(200);
  });
});
