import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeAppleChain } from './helpers/apple.js';
import { runCli } from './helpers/cli.js';
import { ADMIN_TOKEN, admin, createGame, startService, type TestService } from './helpers/service.js';

// `channels set/get/delete` and `products put --store-id-*` as child processes against a real service.
let t: TestService;
let env: Record<string, string>;
const chain = makeAppleChain('cli');
beforeAll(async () => {
  t = await startService({ env: { APPLE_ROOT_CERTS: chain.rootPem } });
  env = { COMBO_URL: t.url, ADMIN_TOKEN };
});
afterAll(() => t?.stop());

describe('channels', () => {
  it('set, get (one and all), delete; secrets shown as ***', async () => {
    const g = await createGame(t, { sandbox_payments: false });
    const a = await runCli(['channels', 'set', g.gameId, 'apple', '--enabled', 'true', '--bundle-id', 'com.example.game', '--app-apple-id', '1234567890', '--accept-sandbox', 'false', '--json'], env);
    expect(a.code, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toMatchObject({ channel: 'apple', enabled: true, bundle_id: 'com.example.game', app_apple_id: 1234567890, accept_sandbox: false, callback_url: expect.stringContaining(`/v1/callbacks/apple/${g.gameId}`) });
    const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const data = JSON.stringify({ service_account: { client_email: 'pay@example.iam.gserviceaccount.com', private_key: key } });
    const gg = await runCli(['channels', 'set', g.gameId, 'google', '--enabled', 'false', '--package-name', 'com.example.game', '--data', '-', '--json'], env, data);
    expect(gg.code, gg.stderr).toBe(0);
    expect(JSON.parse(gg.stdout).service_account.private_key).toBe('***');
    const list = await runCli(['channels', 'get', g.gameId], env);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/CHANNEL\s+ENABLED\s+CALLBACK_URL/);
    expect(list.stdout).toContain('apple');
    expect(list.stdout).not.toContain(key.split('\n')[1]!);
    const one = await runCli(['channels', 'get', g.gameId, 'google', '--json'], env);
    expect(JSON.parse(one.stdout).package_name).toBe('com.example.game');
    const del = await runCli(['channels', 'delete', g.gameId, 'google'], env);
    expect([del.code, del.stdout]).toEqual([0, `deleted channel google of game ${g.gameId}\n`]);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}/channels/google`)).status).toBe(404);
    const bad = await runCli(['channels', 'set', g.gameId, 'sandbox', '--enabled', 'maybe'], env);
    expect(bad.code).toBe(2);
    const refused = await runCli(['channels', 'set', g.gameId, 'apple', '--enabled', 'true'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('bundle_id');
    // Eight CLI processes, each a Node.js start: on a busy machine more than the default minute.
  }, 240_000);

  it('products put --store-id-apple --store-id-google', async () => {
    const g = await createGame(t);
    const r = await runCli(['products', 'put', g.gameId, 'gem_120', '--name', 'gems', '--price', '1200', '--currency', 'CNY', '--store-id-apple', 'com.example.gems120', '--store-id-google', 'gems_120', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).store_product_ids).toEqual({ apple: 'com.example.gems120', google: 'gems_120' });
  }, 120_000);
});
