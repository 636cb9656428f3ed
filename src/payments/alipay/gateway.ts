import type { GameChannel, PayableOrder, ProviderGateway, ProviderPaymentState, RefundRequest, RefundState, StatementEntry } from '../provider.js';
import { downloadBill, parseAlipayBill } from './bill.js';
import { AlipayCallError, fen, yuan, type AlipayAnswer, type AlipayClients } from './client.js';
import type { AlipaySettings } from './settings.js';

export const ALIPAY_CURRENCY = 'CNY';
const SUCCESS = '10000';
const PAID = new Set(['TRADE_SUCCESS', 'TRADE_FINISHED']);
/** Answers that say the trade is not (or no longer) in a state the call applies to: nothing to do. */
const NOTHING_TO_CLOSE = new Set(['ACQ.TRADE_NOT_EXIST', 'ACQ.TRADE_STATUS_ERROR', 'ACQ.TRADE_HAS_CLOSE']);
/** Refund answers (code 40004) that say "try again"; the other business refusals are final, shown to the operator. */
const RETRIED = new Set(['ACQ.SYSTEM_ERROR']);

/**
 * Alipay's side of payments held open (payments.md 4-5), for the lost-callback job and
 * operator refunds: alipay.trade.query and alipay.trade.close by out_trade_no (the order id);
 * alipay.trade.refund of the whole trade with out_request_no = our refund id, and
 * alipay.trade.fastpay.refund.query to follow it. Alipay refunds are idempotent by
 * out_request_no: a refund Alipay has no record of is requested again under the same number.
 * The day's statement is the trade bill of alipay.data.dataservice.bill.downloadurl.query (bill.ts).
 * A call without a verified answer (network, gateway error, signature) throws: asked again later.
 */
export class AlipayGateway implements ProviderGateway {
  constructor(private readonly clients: AlipayClients) {}

  async queryPayment(channel: GameChannel, order: PayableOrder): Promise<ProviderPaymentState> {
    const a = await this.call(channel, 'alipay.trade.query', { out_trade_no: order.order_id });
    if (a.code !== SUCCESS) {
      if (a.sub_code === 'ACQ.TRADE_NOT_EXIST') return { state: 'open' };
      throw refusal('alipay.trade.query', a);
    }
    const status = String(a.trade_status ?? '');
    if (status === 'WAIT_BUYER_PAY') return { state: 'open' };
    if (!PAID.has(status)) return { state: 'closed', detail: status };
    const amount = fen(a.total_amount as string | undefined);
    const tradeNo = a.trade_no;
    if (amount === null || typeof tradeNo !== 'string' || !tradeNo) throw new AlipayCallError(`alipay.trade.query: a ${status} answer without trade_no or total_amount`);
    return { state: 'paid', payment: { provider_txn_id: tradeNo, order_id: order.order_id, amount, currency: ALIPAY_CURRENCY } };
  }

  async closePayment(channel: GameChannel, order: PayableOrder): Promise<void> {
    const a = await this.call(channel, 'alipay.trade.close', { out_trade_no: order.order_id });
    if (a.code !== SUCCESS && !NOTHING_TO_CLOSE.has(a.sub_code ?? '')) throw refusal('alipay.trade.close', a);
  }

  async requestRefund(channel: GameChannel, refund: RefundRequest): Promise<RefundState> {
    const a = await this.call(channel, 'alipay.trade.refund', {
      out_trade_no: refund.order_id,
      trade_no: refund.provider_txn_id,
      refund_amount: yuan(refund.amount),
      out_request_no: refund.refund_id,
      ...(refund.reason ? { refund_reason: refund.reason.slice(0, 256) } : {}),
    });
    if (a.code === SUCCESS) return a.fund_change === 'Y' ? { state: 'succeeded' } : { state: 'pending' };
    if (a.code !== '40004' || RETRIED.has(a.sub_code ?? '')) throw refusal('alipay.trade.refund', a);
    return { state: 'failed', message: `Alipay refused the refund: ${a.sub_code ?? a.code} ${a.sub_msg ?? a.msg ?? ''}`.trim() };
  }

  async queryRefund(channel: GameChannel, refund: RefundRequest): Promise<RefundState> {
    const a = await this.call(channel, 'alipay.trade.fastpay.refund.query', { out_trade_no: refund.order_id, trade_no: refund.provider_txn_id, out_request_no: refund.refund_id });
    if (a.code !== SUCCESS) throw refusal('alipay.trade.fastpay.refund.query', a);
    if (a.refund_status === 'REFUND_SUCCESS') return { state: 'succeeded' };
    // No such refund at Alipay (the request never arrived, or it was refused): ask again.
    return this.requestRefund(channel, refund);
  }

  /** The trade bill of `date` (Beijing time): its trades; none when Alipay has no bill (isp.bill_not_exist). */
  async statement(channel: GameChannel, date: string): Promise<StatementEntry[]> {
    const method = 'alipay.data.dataservice.bill.downloadurl.query';
    const a = await this.call(channel, method, { bill_type: 'trade', bill_date: date });
    if (a.code !== SUCCESS) {
      if (a.sub_code === 'isp.bill_not_exist') return [];
      throw refusal(method, a);
    }
    if (typeof a.bill_download_url !== 'string' || !a.bill_download_url) throw new AlipayCallError(`${method}: the answer has no bill_download_url`);
    return parseAlipayBill(await downloadBill(this.clients.gateway, a.bill_download_url));
  }

  private call(channel: GameChannel, method: string, biz: Record<string, unknown>): Promise<AlipayAnswer> {
    return this.clients.call(channel.settings as AlipaySettings, method, biz);
  }
}

function refusal(method: string, a: AlipayAnswer): AlipayCallError {
  return new AlipayCallError(`${method}: ${a.code} ${a.msg ?? ''} ${a.sub_code ?? ''} ${a.sub_msg ?? ''}`.replace(/\s+/g, ' ').trim());
}
