import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { beijingDate, beijingDayStart } from '../src/lib/beijing-time.js';
import { ManualClock } from '../src/lib/clock.js';
import type { BillLine, Trade } from './helpers/alipay.js';
import { AlipayFixture } from './helpers/alipay-service.js';
import { runCli } from './helpers/cli.js';
import { client, createOrder, orderRow, paymentsOf } from './helpers/orders.js';
import { admin, ADMIN_TOKEN, type TestGame, type TestService } from './helpers/service.js';

/**
 * Reconciliation of the alipay channel (payments.md 6): the trade bill of a day, from
 * alipay.data.dataservice.bill.downloadurl.query and a download of the zip of GBK CSV files it
 * names (the Alipay stand-in of test/helpers/alipay.ts serves both), compared with the stored
 * payments; through POST/GET /admin/v1/reconciliations and the CLI's reconcile.
 */
const DAY = 86_400_000;
// Noon of a Beijing day: the payments are made then, the bill is asked for the next morning.
const clock = new ManualClock(beijingDayStart(Date.UTC(2026, 10, 20)) + 12 * 3_600_000);
const f = new AlipayFixture(clock);
const { alipay } = f;
let t: TestService;
let game: TestGame;

beforeAll(async () => {
  await f.start({ SWEEP_INTERVAL_MS: '600000' });
  t = f.t;
  game = await f.game();
});
afterAll(() => f.stop());

const reconcile = (body: Record<string, unknown>) => admin(t, 'POST', '/admin/v1/reconciliations', body);
const notifyUrl = (g: TestGame) => `${t.url}/v1/callbacks/alipay/${g.gameId}`;

/** An order of `g` whose trade the buyer paid at Alipay; its notify posted when `notify`. */
async function bought(g: TestGame, notify = true): Promise<Trade> {
  const order = await createOrder(t, g, { notify_url: `${f.receiver.url}/n/${g.gameId}` });
  const r = await client(t, '/v1/client/pay', { order_token: order.order_token, channel: 'alipay' });
  expect(r.status, r.text).toBe(200);
  const trade = alipay.buy(r.body.action.url);
  if (notify) expect((await alipay.notify(trade, {}, notifyUrl(g))).text).toBe('success');
  return trade;
}

const line = (trade: Trade, total_amount = trade.total_amount, kind?: BillLine['kind']): BillLine => ({ trade_no: trade.trade_no, out_trade_no: trade.out_trade_no, total_amount, ...(kind ? { kind } : {}) });

describe('the Alipay trade bill of a day against the payments', () => {
  it('applies money no payment recorded, lists payments the bill lacks and amounts that differ; skips refunds and other games', async () => {
    clock.set(beijingDayStart(clock.now()) + DAY + 12 * 3_600_000);
    const date = beijingDate(clock.now());
    const g = await f.game();
    const other = await f.game();
    const [matched, differs, unlisted] = [await bought(g), await bought(g), await bought(g)];
    const lost = await bought(g, false);
    const ofOther = await bought(other);
    alipay.bills.set(date, [line(matched), line(differs, '5.00'), line(lost), line(matched, matched.total_amount, '退款'), line(ofOther)]);
    clock.set(beijingDayStart(clock.now()) + DAY + 10 * 3_600_000);

    const r = await reconcile({ channel: 'alipay', game_id: g.gameId, date });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ channel: 'alipay', game_id: g.gameId, date, status: 'differences', counts: { statement: 3, recorded: 3, differences: 3 }, error: null });
    const byKind = Object.fromEntries(r.body.differences.map((d: any) => [d.kind, d]));
    expect(byKind.missing_payment).toMatchObject({ order_id: lost.out_trade_no, provider_txn_id: lost.trade_no, statement_amount: 600, applied: 'accepted' });
    expect(byKind.amount_differs).toMatchObject({ order_id: differs.out_trade_no, statement_amount: 500, recorded_amount: 600 });
    expect(byKind.not_in_statement).toMatchObject({ order_id: unlisted.out_trade_no, recorded_amount: 600 });
    expect(await orderRow(t, lost.out_trade_no)).toMatchObject({ status: expect.stringMatching(/^(paid|delivered)$/), late_payment: 1 });
    const asked = alipay.calls.filter((c) => c.method === 'alipay.data.dataservice.bill.downloadurl.query' && c.app_id === f.app.appId);
    expect(asked.at(-1)!.biz).toEqual({ bill_type: 'trade', bill_date: date });
    expect(alipay.downloads).toContain(date);
    expect(alipay.violations).toEqual([]);

    // Again: the missing payment is recorded now, once.
    const again = await reconcile({ channel: 'alipay', game_id: g.gameId, date });
    expect(again.body.differences.map((d: any) => d.kind).sort()).toEqual(['amount_differs', 'not_in_statement']);
    expect((await paymentsOf(t, lost.out_trade_no)).length).toBe(1);
    // The other game's order, listed in the same merchant bill, is that game's to reconcile.
    expect((await reconcile({ channel: 'alipay', game_id: other.gameId, date })).body).toMatchObject({ status: 'matched', counts: { statement: 1, recorded: 1, differences: 0 } });

    const list = await admin(t, 'GET', `/admin/v1/reconciliations?game_id=${g.gameId}&channel=alipay`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((x: any) => x.reconciliation_id)).toEqual([again.body.reconciliation_id, r.body.reconciliation_id]);
    expect((await admin(t, 'GET', `/admin/v1/reconciliations?game_id=${g.gameId}&channel=wechat`)).body.data).toEqual([]);

    const cli = await runCli(['reconcile', '--channel', 'alipay', '--game', g.gameId, '--date', date], { COMBO_URL: t.url, ADMIN_TOKEN });
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout).toContain(`alipay ${g.gameId} ${date}: differences`);
    expect(cli.stdout).toContain('not_in_statement');
    // Eleven orders, a CLI process: slow on a loaded machine.
  }, 120_000);

  it('a day without a bill (isp.bill_not_exist) and without payments matches', async () => {
    const date = beijingDate(clock.now() - 5 * DAY);
    const r = await reconcile({ channel: 'alipay', game_id: game.gameId, date });
    expect(r.body).toMatchObject({ status: 'matched', counts: { statement: 0, recorded: 0, differences: 0 }, differences: [] });
  });

  it('a bill that cannot be downloaded is stored failed, with why; the CLI exits 1', async () => {
    const date = beijingDate(clock.now() - 4 * DAY);
    alipay.bills.set(date, []);
    alipay.failDownloads = 1;
    const r = await reconcile({ channel: 'alipay', game_id: game.gameId, date });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ status: 'failed', counts: null, differences: [], error: 'Alipay answered 503 to the bill download' });
    alipay.failDownloads = 1;
    const cli = await runCli(['reconcile', '--channel', 'alipay', '--game', game.gameId, '--date', date], { COMBO_URL: t.url, ADMIN_TOKEN });
    expect(cli.code).toBe(1);
    expect(cli.stdout).toContain('failed');
  });

  it('refuses today, a game without the alipay channel', async () => {
    expect((await reconcile({ channel: 'alipay', game_id: game.gameId, date: beijingDate(clock.now()) })).status).toBe(400);
    expect((await reconcile({ channel: 'alipay', game_id: 'no-such-game', date: '2026-01-01' })).status).toBe(404);
  });
});
