/**
 * docs/guides/payments-alipay.md: its `sh` blocks run in order against a real service, as an operator
 * runs them: a key pair made with openssl, the alipay channel set with curl and jq. The
 * application's public key the guide prints is then given to the Alipay stand-in, and a
 * payment through the channel the guide set is paid by Alipay's notify.
 */
import { createPublicKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlipayStandIn, makeAlipayApp, paramsOf, signedByApp } from './helpers/alipay.js';
import { TEST_DB } from './helpers/db.js';
import { describeRun, GUIDES, runShellBlocks, shellBlocks, unmetExpectations, type GuideRun } from './helpers/guides.js';
import { client, createOrder, statusOf } from './helpers/orders.js';
import { ADMIN_TOKEN, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

const GUIDE = 'docs/guides/payments-alipay.md';
const alipay = new AlipayStandIn();
const appId = makeAlipayApp().appId;
let t: TestService;
let game: TestGame;
let dir: string;

beforeAll(async () => {
  await alipay.start();
  t = await startService({ env: { ALIPAY_GATEWAY_URL: alipay.url } });
  game = await createGame(t);
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-payments-guide-'));
  writeFileSync(path.join(dir, 'alipay_public.pem'), alipay.publicKeyPem);
});
afterAll(async () => {
  await t?.stop();
  await alipay.close();
  rmSync(dir, { recursive: true, force: true });
});

describe(GUIDE, () => {
  const blocks = shellBlocks(GUIDE);
  let run: GuideRun;
  it('has as many sh blocks as the runner expects', () => expect(blocks.length).toBe(GUIDES[GUIDE]!.shBlocks));

  it(`runs every example against a real service (${TEST_DB})`, async () => {
    const env = { COMBO_URL: t.url, ADMIN_TOKEN, GAME_ID: game.gameId, ALIPAY_APP_ID: appId, ALIPAY_PUBLIC_KEY_FILE: path.join(dir, 'alipay_public.pem') };
    run = await runShellBlocks(blocks, TEST_DB, env, 60_000);
    expect(run.status, describeRun(run)).toBe(0);
    expect(run.ran).toEqual(blocks.map((_, i) => i));
    expect(unmetExpectations(blocks, run)).toEqual([]);
  }, 70_000);

  it('left a working alipay channel: signed with the key the guide made, paid by a notify verified with Alipay\'s key', async () => {
    const pem = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/.exec(run.outputs.get(0) ?? '')?.[0];
    expect(pem, describeRun(run)).toBeDefined();
    const app = { appId, privateKeyPem: '', publicKey: createPublicKey(pem!) };
    alipay.addApp(app);
    const order = await createOrder(t, game);
    const r = await client(t, '/v1/client/pay', { order_token: order.order_token, channel: 'alipay' });
    expect(r.status, r.text).toBe(200);
    expect(signedByApp(paramsOf(r.body.action.url), app)).toBe(true);
    const trade = alipay.buy(r.body.action.url);
    expect((await alipay.notify(trade, {}, `${t.url}/v1/callbacks/alipay/${game.gameId}`)).text).toBe('success');
    expect(['paid', 'delivered']).toContain(await statusOf(t, order.order_id));
  });
});
