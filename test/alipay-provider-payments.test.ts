import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import type { Trade } from './helpers/alipay.js';
import { AlipayFixture } from './helpers/alipay-service.js';
import { client, createOrder, notificationsOf, paymentsOf, statusOf, type CreatedOrder } from './helpers/orders.js';
import { until, type Receiver } from './helpers/receiver.js';
import { admin, type TestGame, type TestService } from './helpers/service.js';

/**
 * The alipay channel with the shared pieces of payments held open at a provider (payments.md
 * 4-5): the lost-callback job (run by the test, on a manual clock) queries and closes Alipay
 * trades, and operator refunds are requested from Alipay and settled by its answer, its
 * refund query or its notify. Alipay is the stand-in of test/helpers/alipay.ts.
 */
const clock = new ManualClock(Date.UTC(2026, 10, 29, 2, 0, 0));
const f = new AlipayFixture(clock);
const { alipay } = f;
let receiver: Receiver;
let t: TestService;
let game: TestGame;

beforeAll(async () => {
  // The job and the sweeper run when the test says (runOnce), not on their own timer.
  await f.start({ SWEEP_INTERVAL_MS: '600000' });
  ({ t, receiver } = f);
  game = await f.game();
});
afterAll(() => f.stop());

const runJob = () => t.service.providerPaymentJob.runOnce();
const callsOf = (method: string, orderId: string) => alipay.calls.filter((c) => c.method === method && c.biz.out_trade_no === orderId);

/** An order whose page pay the client started; the action it was handed. */
async function started(mode = 'page'): Promise<{ order: CreatedOrder; action: string }> {
  const order = await createOrder(t, game, { notify_url: `${receiver.url}/n/${game.gameId}` });
  const r = await client(t, '/v1/client/pay', { order_token: order.order_token, channel: 'alipay', mode });
  expect(r.status, r.text).toBe(200);
  return { order, action: r.body.action.url ?? r.body.action.order_string };
}

/** An order paid through Alipay (its notify answered) and delivered to the game. */
async function delivered(): Promise<{ order: CreatedOrder; trade: Trade }> {
  const { order, action } = await started();
  const trade = alipay.buy(action);
  expect((await alipay.notify(trade, {}, `${t.url}/v1/callbacks/alipay/${game.gameId}`)).text).toBe('success');
  await until('the order delivered', async () => ((await statusOf(t, order.order_id)) === 'delivered' ? true : undefined));
  return { order, trade };
}

const refund = (orderId: string) => admin(t, 'POST', `/admin/v1/orders/${orderId}/refund`, { reason: 'player asked' });
const notifyUrl = () => `${t.url}/v1/callbacks/alipay/${game.gameId}`;

async function refundNotifications(orderId: string): Promise<string[]> {
  return (await notificationsOf(t, orderId)).map((n) => n.type);
}

describe('lost notifies: the job asks Alipay (alipay.trade.query)', () => {
  it('an order paid at Alipay whose notify never comes is paid by the query, once; its ship_order goes out', async () => {
    const { order, action } = await started('wap');
    const trade = alipay.buy(action);
    clock.advance(10_000);
    await runJob();
    expect(callsOf('alipay.trade.query', order.order_id)).toHaveLength(1);
    expect(['paid', 'delivered']).toContain(await statusOf(t, order.order_id));
    expect(await paymentsOf(t, order.order_id)).toEqual([expect.objectContaining({ provider: 'alipay', provider_txn_id: trade.trade_no, amount: 600, status: 'accepted' })]);
    // The notify arriving late changes nothing; nor does a later run.
    expect((await alipay.notify(trade, {}, notifyUrl())).text).toBe('success');
    clock.advance(60_000);
    await runJob();
    expect(await paymentsOf(t, order.order_id)).toHaveLength(1);
    await until('the ship_order at the game', () => receiver.received.find((x) => x.body?.data?.order_id === order.order_id));
  });

  it('a trade not opened or not paid stays open and is asked again later; at expiry it is queried once more and closed (alipay.trade.close)', async () => {
    const { order, action } = await started();
    clock.advance(10_000);
    await runJob();
    expect(callsOf('alipay.trade.query', order.order_id)).toHaveLength(1);
    alipay.buy(action, 'WAIT_BUYER_PAY');
    clock.advance(30_000);
    await runJob();
    expect(callsOf('alipay.trade.query', order.order_id)).toHaveLength(2);
    expect(callsOf('alipay.trade.close', order.order_id)).toHaveLength(0);
    clock.set(order.expires_at * 1000 + 1);
    await runJob();
    expect(callsOf('alipay.trade.close', order.order_id)).toHaveLength(1);
    expect(alipay.trades.get(order.order_id)?.trade_status).toBe('TRADE_CLOSED');
    const row = await t.service.database.db.selectFrom('provider_payments').selectAll().where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(row.state).toBe('closed');
    clock.advance(3_600_000);
    await runJob();
    expect(callsOf('alipay.trade.query', order.order_id)).toHaveLength(3);
  });

  it('an order the operator cancels has its Alipay trade closed at the next run (a trade never opened: nothing to close, done)', async () => {
    const opened = await started();
    alipay.buy(opened.action, 'WAIT_BUYER_PAY');
    const never = await started('app');
    for (const o of [opened.order, never.order]) expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/cancel`, { reason: 'test' })).status).toBe(200);
    // The cancel makes its open payments due after it answers: run the job until they were.
    const closes = () => [opened, never].map((o) => callsOf('alipay.trade.close', o.order.order_id).length);
    await until('both trades closed', async () => (await runJob(), closes().every((n) => n > 0) ? true : undefined));
    expect(callsOf('alipay.trade.close', opened.order.order_id)).toHaveLength(1);
    expect(alipay.trades.get(opened.order.order_id)?.trade_status).toBe('TRADE_CLOSED');
    expect(callsOf('alipay.trade.close', never.order.order_id)).toHaveLength(1);
    for (const o of [opened.order, never.order]) {
      const row = await t.service.database.db.selectFrom('provider_payments').selectAll().where('order_id', '=', o.order_id).executeTakeFirstOrThrow();
      expect(row.state).toBe('closed');
    }
  });
});

describe('operator refunds (alipay.trade.refund of the whole trade)', () => {
  it('accepted: refunded at once, the game gets its refund after ship_order; Alipay\'s refund notify afterwards changes nothing', async () => {
    const { order, trade } = await delivered();
    const r = await refund(order.order_id);
    expect(r.status, r.text).toBe(200);
    expect(r.body.status).toBe('refunded');
    const [call] = callsOf('alipay.trade.refund', order.order_id);
    expect(call!.biz).toMatchObject({ out_trade_no: order.order_id, trade_no: trade.trade_no, refund_amount: '6.00', refund_reason: 'player asked' });
    const refundId = call!.biz.out_request_no as string;
    expect(refundId).toMatch(/^rfd_/);
    expect((await alipay.notify(alipay.trades.get(order.order_id)!, { out_biz_no: refundId }, notifyUrl())).text).toBe('success');
    await until('the refund at the game', async () => ((await refundNotifications(order.order_id)).length === 2 ? true : undefined));
    expect(await refundNotifications(order.order_id)).toEqual(['ship_order', 'refund']);
    expect(await statusOf(t, order.order_id)).toBe('refunded');
  });

  it('refused (the seller\'s balance): refund_failed, visible with Alipay\'s reason; requested again: refunded', async () => {
    const { order } = await delivered();
    alipay.refuseRefunds.push({ sub_code: 'ACQ.SELLER_BALANCE_NOT_ENOUGH', sub_msg: '卖家余额不足' });
    const first = await refund(order.order_id);
    expect(first.status, first.text).toBe(200);
    expect(first.body.status).toBe('refund_failed');
    const failed = await t.service.database.db.selectFrom('provider_refunds').selectAll().where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(failed.status).toBe('failed');
    expect(failed.detail).toContain('ACQ.SELLER_BALANCE_NOT_ENOUGH');
    expect(await refundNotifications(order.order_id)).toEqual(['ship_order']);

    const again = await refund(order.order_id);
    expect(again.body.status).toBe('refunded');
    expect(callsOf('alipay.trade.refund', order.order_id)).toHaveLength(2);
    await until('the refund at the game', async () => ((await refundNotifications(order.order_id)).length === 2 ? true : undefined));
  });

  it('an answer lost on the way: refund_pending, then the job\'s refund query (alipay.trade.fastpay.refund.query) settles it', async () => {
    const { order } = await delivered();
    // Both the request and the retry its HTTP client makes on a cut connection (urllib's socketErrorRetry).
    alipay.unanswered = 2;
    const r = await refund(order.order_id);
    expect(r.body.status).toBe('refund_pending');
    expect(callsOf('alipay.trade.refund', order.order_id)).toHaveLength(2);
    expect(alipay.trades.get(order.order_id)?.trade_status).toBe('TRADE_CLOSED');
    expect(await refundNotifications(order.order_id)).toEqual(['ship_order']);
    clock.advance(10_000);
    await runJob();
    expect(callsOf('alipay.trade.fastpay.refund.query', order.order_id)).toHaveLength(1);
    expect(await statusOf(t, order.order_id)).toBe('refunded');
    expect(callsOf('alipay.trade.refund', order.order_id)).toHaveLength(2);
  });

  it('a request that never reached Alipay: the refund query finds none and the refund is requested again under the same out_request_no', async () => {
    const { order } = await delivered();
    // Alipay unreachable: the request is lost before Alipay carries it out.
    const { port } = new URL(alipay.url);
    await alipay.close();
    const r = await refund(order.order_id);
    expect(r.body.status).toBe('refund_pending');
    await alipay.start(Number(port));
    const { refund_id: refundId } = await t.service.database.db.selectFrom('provider_refunds').select('refund_id').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    clock.advance(10_000);
    await runJob();
    expect(callsOf('alipay.trade.refund', order.order_id).map((c) => c.biz.out_request_no)).toEqual([refundId]);
    expect(await statusOf(t, order.order_id)).toBe('refunded');
  });
});

describe('refunds made in the merchant portal', () => {
  it('a whole refund notify (TRADE_CLOSED, refund_fee = total_amount, no out_biz_no of ours) refunds the order once; a partial one changes nothing', async () => {
    const { order, trade } = await delivered();
    expect((await alipay.notify({ ...trade, refund_fee: '1.00' }, { out_biz_no: 'portal-1' }, notifyUrl())).text).toBe('success');
    expect(await statusOf(t, order.order_id)).toBe('delivered');
    const whole = { ...trade, trade_status: 'TRADE_CLOSED' as const, refund_fee: '6.00' };
    expect((await alipay.notify(whole, { out_biz_no: 'portal-2' }, notifyUrl())).text).toBe('success');
    expect(await statusOf(t, order.order_id)).toBe('refunded');
    expect((await alipay.notify(whole, { out_biz_no: 'portal-2' }, notifyUrl())).text).toBe('success');
    await until('the refund at the game', async () => ((await refundNotifications(order.order_id)).length === 2 ? true : undefined));
    expect(await refundNotifications(order.order_id)).toEqual(['ship_order', 'refund']);
    expect(callsOf('alipay.trade.refund', order.order_id)).toHaveLength(0);
  });
});
