import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beijingDate } from '../src/lib/beijing-time.js';
import { makeAlipayApp } from './helpers/alipay.js';
import { runCli, startCli } from './helpers/cli.js';
import { statusOf } from './helpers/orders.js';
import { Receiver, until } from './helpers/receiver.js';
import { ADMIN_TOKEN, admin, createGame, type TestGame, type TestService, startService } from './helpers/service.js';
import { useWechat, wechatPaidOrder } from './helpers/wechat-orders.js';
import { WechatPayStandIn } from './helpers/wechatpay.js';

// `channels set wechat|alipay` (keys from files and stdin), `orders refund` and `reconcile list`
// as child processes against a real service and the WeChat Pay stand-in.
const wx = new WechatPayStandIn();
const keys = new Map<string, string[]>();
let t: TestService;
let receiver: Receiver;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  await wx.start();
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
  t = await startService({ env: { WECHATPAY_BASE_URL: wx.url, PUBLIC_BASE_URL: 'https://pay.example.com', NOTIFY_POLL_INTERVAL_MS: '50' } });
  wx.deliverTo = (u) => t.url + new URL(u).pathname;
  env = { COMBO_URL: t.url, ADMIN_TOKEN };
  dir = mkdtempSync(path.join(os.tmpdir(), 'cli-pay-'));
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
  await wx.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  writeFileSync(p, text);
  return p;
}

async function wechatGame(): Promise<TestGame> {
  const g = await createGame(t, { sandbox_payments: false });
  keys.set(g.gameId, [g.secret]);
  await useWechat(t, wx, g);
  return g;
}

describe('channels set wechat / alipay', () => {
  it('takes each setting as a flag and the keys from files or stdin; get shows the secrets as ***', async () => {
    const g = await createGame(t, { sandbox_payments: false });
    const s = wx.settings() as Record<string, string>;
    const args = ['channels', 'set', g.gameId, 'wechat', '--enabled', 'true', '--mchid', s.mchid!, '--appid', s.appid!, '--merchant-serial-no', s.merchant_serial_no!, '--wechatpay-public-key-id', s.wechatpay_public_key_id!];
    const files = ['--merchant-private-key-file', '-', '--api-v3-key-file', file('apiv3.txt', `${wx.apiV3Key}\n`), '--wechatpay-public-key-file', file('pub_key.pem', s.wechatpay_public_key!)];
    const r = await runCli([...args, ...files, '--json'], env, s.merchant_private_key);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ channel: 'wechat', enabled: true, mchid: wx.mchid, merchant_private_key: '***', api_v3_key: '***', wechatpay_public_key: s.wechatpay_public_key, callback_url: `https://pay.example.com/v1/callbacks/wechat/${g.gameId}` });
    expect(r.stdout).not.toContain(wx.apiV3Key);
    // The keys work: WeChat Pay takes the service's signed requests (an order opens a payment).
    const paid = await wechatPaidOrder(t, wx, g, `${receiver.url}/n/${g.gameId}`);
    expect(wx.requests.filter((x) => x.url.startsWith('/v3/pay/transactions/native')).every((x) => x.signed)).toBe(true);
    expect(paid.transaction_id).toMatch(/^42000/);

    const app = makeAlipayApp();
    const alipayPublic = file('alipay_public_key.pem', app.publicKey.export({ type: 'spki', format: 'pem' }) as string);
    const a = await runCli(['channels', 'set', g.gameId, 'alipay', '--enabled', 'false', '--app-id', app.appId, '--app-private-key-file', file('app_private_key.pem', app.privateKeyPem), '--alipay-public-key-file', alipayPublic, '--json'], env);
    expect(a.code, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toMatchObject({ channel: 'alipay', enabled: false, app_id: app.appId, app_private_key: '***', callback_url: expect.stringContaining(`/v1/callbacks/alipay/${g.gameId}`) });
    expect(a.stdout).not.toContain(app.privateKeyPem.split('\n')[1]!);
  }, 240_000);

  it('refuses two keys from stdin, and a key file it cannot read (usage errors, nothing sent)', async () => {
    const g = await createGame(t, { sandbox_payments: false });
    const two = await runCli(['channels', 'set', g.gameId, 'wechat', '--enabled', 'true', '--merchant-private-key-file', '-', '--api-v3-key-file', '-'], env, 'x');
    expect([two.code, two.stderr]).toEqual([2, expect.stringContaining('only one of --merchant-private-key-file, --api-v3-key-file can read standard input')]);
    const missing = await runCli(['channels', 'set', g.gameId, 'alipay', '--enabled', 'true', '--app-private-key-file', path.join(dir, 'nope.pem')], env);
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('--app-private-key-file: cannot read')]);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}/channels`)).body.data).toEqual([]);
  }, 240_000);
});

describe('orders refund', () => {
  it('--wait follows a WeChat Pay refund from refund_pending to refunded', async () => {
    const g = await wechatGame();
    const o = await wechatPaidOrder(t, wx, g, `${receiver.url}/n/${g.gameId}`);
    wx.refundBehaviour = { kind: 'processing' };
    const cli = startCli(['orders', 'refund', o.order_id, '--reason', 'player asked', '--wait', '60', '--interval', '0.2'], env);
    // Asked of WeChat Pay, which is processing it (a CLI process start: slow on a busy machine).
    const refund = await until('the refund request', () => [...wx.refunds.values()].find((r) => r.out_trade_no === o.order_id), 90_000);
    expect(await statusOf(t, o.order_id)).toBe('refund_pending');
    refund.status = 'SUCCESS';
    expect((await wx.refundCallback(refund)).status).toBe(204);
    const r = await cli.exited;
    expect([r.code, r.stdout], r.stderr).toEqual([0, `${o.order_id} refunded\n`]);
  }, 240_000);

  it("a refused refund exits 1 with WeChat Pay's reason; requested again, it is refunded", async () => {
    const g = await wechatGame();
    const o = await wechatPaidOrder(t, wx, g, `${receiver.url}/n/${g.gameId}`);
    wx.refundBehaviour = { kind: 'refuse', status: 403, code: 'NOT_ENOUGH', message: '基本账户余额不足' };
    const refused = await runCli(['orders', 'refund', o.order_id], env);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).toMatch(new RegExp(`^${o.order_id} refund_failed: .*基本账户余额不足.* \\(it may be requested again\\)\\n$`));
    wx.refundBehaviour = { kind: 'success' };
    const again = await runCli(['orders', 'refund', o.order_id, '--wait', '30', '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout).status).toBe('refunded');
    const usage = await runCli(['orders', 'refund', o.order_id, '--wait', '-1'], env);
    expect(usage.code).toBe(2);
  }, 240_000);
});

describe('reconcile list', () => {
  it("lists a game's runs, newest first, with their counts; --json with the differences", async () => {
    const g = await wechatGame();
    const o = await wechatPaidOrder(t, wx, g, `${receiver.url}/n/${g.gameId}`);
    const yesterday = beijingDate(Date.now() - 86_400_000);
    // Yesterday's bill lists today's payment with another amount.
    wx.bills.set(yesterday, [{ transaction_id: o.transaction_id, out_trade_no: o.order_id, total: 599 }]);
    const run = await runCli(['reconcile', '--channel', 'wechat', '--game', g.gameId, '--date', yesterday], env);
    expect(run.code, run.stderr).toBe(0);
    const list = await runCli(['reconcile', 'list', '--game', g.gameId], env);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/RUN_AT\s+GAME_ID\s+CHANNEL\s+DATE\s+STATUS\s+STATEMENT\s+RECORDED\s+DIFFERENCES/);
    expect(list.stdout).toMatch(new RegExp(`${g.gameId}\\s+wechat\\s+${yesterday}\\s+differences\\s+1\\s+0\\s+1`));
    const json = await runCli(['reconcile', 'list', '--game', g.gameId, '--channel', 'wechat', '--limit', '5', '--json'], env);
    expect(JSON.parse(json.stdout).data[0].differences).toEqual([{ kind: 'amount_differs', provider_txn_id: o.transaction_id, order_id: o.order_id, statement_amount: 599, recorded_amount: 600 }]);
    expect((await runCli(['reconcile', 'list', '--limit', '0'], env)).code).toBe(2);
  }, 240_000);
});
