import { Errors } from '../../errors.js';
import type { OrderStore } from '../../orders/store.js';
import type { ChannelService } from '../channel-service.js';
import type { ProviderPayments } from '../provider-payments/service.js';
import type { PaymentOutcome } from '../service.js';
import { fen, type AlipayClients } from './client.js';
import { ALIPAY_CURRENCY } from './gateway.js';
import type { AlipaySettings } from './settings.js';

export interface AlipayNotifyDeps {
  providerPayments: ProviderPayments;
  channels: ChannelService;
  orders: OrderStore;
  clients: AlipayClients;
}

/** What a notify did, for the callback's log line. */
export interface NotifyOutcome {
  notify_id?: string;
  trade_status: string;
  out_trade_no: string;
  trade_no: string;
  /** TRADE_SUCCESS/TRADE_FINISHED: the payment as applied. */
  payment?: Pick<PaymentOutcome, 'payment_id' | 'status' | 'replay' | 'reason'>;
  /** A refund notify: what it settled (ProviderPayments.reportRefund). */
  refund?: string;
}

const PAID = new Set(['TRADE_SUCCESS', 'TRADE_FINISHED']);

/**
 * Alipay's async notify at POST /v1/callbacks/alipay/:game_id (payments.md 4): a form post,
 * RSA2-signed by Alipay, verified with the game's alipay_public_key, its app_id the game's.
 * TRADE_SUCCESS and TRADE_FINISHED pay the order out_trade_no names, with the amount paid
 * (total_amount in yuan): an amount other than the order's is kept flagged and pays nothing.
 * A notify of a refund (refund_fee, gmt_refund; out_biz_no is the refund's out_request_no)
 * settles ours (refund_pending -> refunded), or refunds the order when it was made in the
 * merchant portal and returns the whole trade (TRADE_CLOSED); a partial one changes nothing.
 * WAIT_BUYER_PAY and a TRADE_CLOSED of an unpaid trade change nothing. Alipay sends a notify
 * until it is answered `success`: every step is idempotent.
 */
export class AlipayNotifications {
  constructor(private readonly d: AlipayNotifyDeps) {}

  async receive(gameId: string, body: string): Promise<NotifyOutcome> {
    const fields = await this.verified(gameId, body);
    const { out_trade_no: orderId, trade_no: tradeNo, trade_status: status } = fields;
    if (!orderId || !tradeNo || !status) throw Errors.invalidRequest('the notify lacks out_trade_no, trade_no or trade_status');
    const out: NotifyOutcome = { trade_status: status, out_trade_no: orderId, trade_no: tradeNo, ...(fields.notify_id ? { notify_id: fields.notify_id } : {}) };
    const refunded = fields.refund_fee === undefined ? 0 : amountOf(fields, 'refund_fee');
    if (refunded > 0) {
      const r = await this.d.providerPayments.reportRefund('alipay', {
        refund_id: fields.out_biz_no || null,
        provider_refund_id: null,
        provider_txn_id: tradeNo,
        order_id: orderId,
        state: 'succeeded',
        amount: refunded,
        total: amountOf(fields, 'total_amount'),
      });
      return { ...out, refund: r.settled };
    }
    if (!PAID.has(status)) return out;
    await this.checkGame(gameId, orderId);
    const p = await this.d.providerPayments.applyPaid('alipay', { provider_txn_id: tradeNo, order_id: orderId, amount: amountOf(fields, 'total_amount'), currency: ALIPAY_CURRENCY });
    return { ...out, payment: { payment_id: p.payment_id, status: p.status, replay: p.replay, ...(p.reason ? { reason: p.reason } : {}) } };
  }

  /** The notify's fields once its signature and app_id are the game's channel's. */
  private async verified(gameId: string, body: string): Promise<Record<string, string>> {
    const channel = (await this.d.channels.forGame(gameId)).get('alipay');
    if (!channel) throw Errors.notFound(`game ${gameId} has no alipay channel`);
    const settings = channel.settings as AlipaySettings;
    const fields = parseForm(body);
    if (!this.d.clients.verifyNotify(settings, fields)) throw Errors.paymentRejected("the notify's signature does not verify with the game's alipay_public_key (RSA2)");
    if (fields.app_id !== settings.app_id) throw Errors.paymentRejected(`the notify is for app_id ${fields.app_id ?? '(none)'}, not the game's`);
    return fields;
  }

  /** An order of another game is never paid through this game's channel. */
  private async checkGame(gameId: string, orderId: string): Promise<void> {
    const order = await this.d.orders.findById(this.d.orders.db, orderId);
    if (order && order.game_id !== gameId) throw Errors.paymentRejected(`order ${orderId} is not of game ${gameId}`);
  }
}

/** An amount field in yuan, in fen; 400 when it is not one. */
function amountOf(fields: Record<string, string>, name: 'total_amount' | 'refund_fee'): number {
  const v = fen(fields[name]);
  if (v === null) throw Errors.invalidRequest(`the notify's ${name} is not an amount in yuan: ${fields[name] ?? '(none)'}`);
  return v;
}

/** The fields of a form post, each once; 400 when it is not one. */
export function parseForm(body: string): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of new URLSearchParams(body)) {
    if (Object.hasOwn(out, k)) throw Errors.invalidRequest(`the notify repeats the field ${k}`);
    out[k] = v;
  }
  if (!out.sign) throw Errors.invalidRequest('the notify is not a signed form (application/x-www-form-urlencoded with sign)');
  return out;
}
