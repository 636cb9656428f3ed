import { Errors } from '../../errors.js';
import { BEIJING_OFFSET_MS } from '../../lib/beijing-time.js';
import type { Clock } from '../../lib/clock.js';
import type { ChannelSettings, GameChannel, PayableOrder, PaymentProvider, PaymentStart, PayOptions, ProviderGateway, ProviderPaymentState, RefundRequest, RefundState, StatementEntry, VerifiedPayment } from '../provider.js';
import { WechatPayClient, WechatPayRefusal, type WechatAnswer } from './client.js';
import { parseTradeBill } from './bill.js';
import { appSignMessage, nonce, privateKey, publicKey, rsaSign } from './crypto.js';
import { WECHAT_SECRET_FIELDS, WechatSettings } from './settings.js';

export interface WechatDeps {
  /** WECHATPAY_BASE_URL. */
  baseUrl: string;
  clock: Clock;
  /** The callback address WeChat Pay is given (notify_url), by game. */
  callbackUrl: (gameId: string) => string;
}

/** A transaction as WeChat Pay describes it (query answer, decrypted payment callback). */
export interface WechatTransaction {
  mchid?: string;
  appid?: string;
  out_trade_no?: string;
  transaction_id?: string;
  trade_state?: string;
  amount?: { total?: number; currency?: string };
}

const PAID = new Set(['SUCCESS', 'REFUND']);
const OPEN = new Set(['NOTPAY', 'USERPAYING']);
const PATHS: Record<string, string> = { native: '/v3/pay/transactions/native', h5: '/v3/pay/transactions/h5', app: '/v3/pay/transactions/app' };

/**
 * The `wechat` channel (payments.md 3-5): WeChat Pay API v3, Native (a QR code), H5 (a
 * redirect) and App (the Open SDK's PayReq). out_trade_no is our order id; amounts are fen
 * (CNY only). Confirmed by WeChat Pay's callback (routes.ts) or the lost-callback job's query
 * (`gateway`); refunds are requested from it and settled by its refund callback or a query.
 */
export class WechatProvider implements PaymentProvider {
  readonly name = 'wechat';
  readonly sandbox = false;
  readonly settingsBody = WechatSettings;
  readonly secretFields = WECHAT_SECRET_FIELDS;
  readonly hasCallbacks = true;
  readonly modes = ['native', 'h5', 'app'] as const;
  readonly client: WechatPayClient;
  readonly gateway: ProviderGateway;

  constructor(private readonly d: WechatDeps) {
    this.client = new WechatPayClient(d.baseUrl, d.clock);
    this.gateway = {
      queryPayment: (channel, order) => this.queryPayment(channel, order),
      closePayment: (channel, order) => this.closePayment(channel, order),
      requestRefund: (channel, refund) => this.requestRefund(channel, refund),
      queryRefund: (channel, refund) => this.queryRefund(channel, refund),
      statement: (channel, date) => this.statement(channel, date),
    };
  }

  checkSettings(settings: ChannelSettings): void {
    const s = settings as WechatSettings;
    try {
      privateKey(s.merchant_private_key);
    } catch {
      throw Errors.invalidRequest('merchant_private_key is not a PEM RSA private key (apiclient_key.pem)');
    }
    try {
      publicKey(s.wechatpay_public_key);
    } catch {
      throw Errors.invalidRequest('wechatpay_public_key is not a PEM public key (pub_key.pem)');
    }
  }

  async start(order: PayableOrder & { expires_at?: number }, channel: GameChannel, opts: PayOptions): Promise<PaymentStart> {
    if (order.currency !== 'CNY') throw Errors.channelUnavailable(`WeChat Pay takes CNY only; order ${order.order_id} is in ${order.currency}`);
    const s = channel.settings as WechatSettings;
    const mode = opts.mode ?? 'native';
    const body: Record<string, unknown> = {
      appid: s.appid,
      mchid: s.mchid,
      description: `${order.product_id} x${order.quantity}`.slice(0, 127),
      out_trade_no: order.order_id,
      notify_url: this.d.callbackUrl(order.game_id),
      amount: { total: order.amount, currency: 'CNY' },
      ...(order.expires_at ? { time_expire: rfc3339Beijing(order.expires_at) } : {}),
    };
    if (mode === 'h5') body.scene_info = { payer_client_ip: opts.client_ip, h5_info: { type: 'Wap' } };
    const data = await this.refusalsAs503(() => this.client.call(s, 'POST', PATHS[mode] as string, body));
    if (mode === 'native') return { kind: 'pending', action: { type: 'qr', code_url: answerString(data, 'code_url') } };
    if (mode === 'h5') return { kind: 'pending', action: { type: 'redirect', url: answerString(data, 'h5_url') } };
    return { kind: 'pending', action: { type: 'wechat_app', params: this.appParams(s, answerString(data, 'prepay_id')) } };
  }

  /** The Open SDK's PayReq for a prepay_id, signed with the merchant key. */
  appParams(s: WechatSettings, prepayId: string) {
    const timestamp = String(Math.floor(this.d.clock.now() / 1000));
    const noncestr = nonce();
    const sign = rsaSign(this.client.key(s.merchant_private_key, privateKey), appSignMessage(s.appid, timestamp, noncestr, prepayId));
    return { appid: s.appid, partnerid: s.mchid, prepayid: prepayId, package: 'Sign=WXPay', noncestr, timestamp, sign };
  }

  /**
   * What a transaction (queried, or from a callback) pays; throws when it is another
   * merchant's or app's (never believed), null when it is not paid.
   */
  paymentOf(s: WechatSettings, t: WechatTransaction): VerifiedPayment | null {
    if (t.mchid !== s.mchid || t.appid !== s.appid) throw Errors.paymentRejected("the transaction is another merchant's or app's (mchid or appid differs from the game's wechat channel)");
    if (!t.trade_state || !PAID.has(t.trade_state)) return null;
    if (!t.transaction_id || !t.out_trade_no || !Number.isSafeInteger(t.amount?.total)) throw Errors.invalidRequest('the transaction has no transaction_id, out_trade_no or amount.total');
    return { provider_txn_id: t.transaction_id, order_id: t.out_trade_no, amount: t.amount!.total!, currency: t.amount?.currency ?? 'CNY' };
  }

  private async queryPayment(channel: GameChannel, order: PayableOrder): Promise<ProviderPaymentState> {
    const s = channel.settings as WechatSettings;
    let t: WechatTransaction;
    try {
      t = (await this.client.call(s, 'GET', `/v3/pay/transactions/out-trade-no/${encodeURIComponent(order.order_id)}?mchid=${encodeURIComponent(s.mchid)}`)).data as WechatTransaction;
    } catch (e) {
      if (e instanceof WechatPayRefusal && e.code === 'ORDER_NOT_EXIST') return { state: 'open' };
      throw e;
    }
    const payment = this.paymentOf(s, t);
    if (payment) return { state: 'paid', payment };
    return t.trade_state && OPEN.has(t.trade_state) ? { state: 'open' } : { state: 'closed', detail: t.trade_state };
  }

  private async closePayment(channel: GameChannel, order: PayableOrder): Promise<void> {
    const s = channel.settings as WechatSettings;
    await this.client.call(s, 'POST', `/v3/pay/transactions/out-trade-no/${encodeURIComponent(order.order_id)}/close`, { mchid: s.mchid });
  }

  private async requestRefund(channel: GameChannel, r: RefundRequest): Promise<RefundState> {
    const s = channel.settings as WechatSettings;
    const body = {
      transaction_id: r.provider_txn_id,
      out_refund_no: r.refund_id,
      ...(r.reason ? { reason: r.reason.slice(0, 80) } : {}),
      notify_url: this.d.callbackUrl(channel.game_id),
      amount: { refund: r.amount, total: r.amount, currency: r.currency },
    };
    try {
      return refundState((await this.client.call(s, 'POST', '/v3/refund/domestic/refunds', body)).data);
    } catch (e) {
      if (e instanceof WechatPayRefusal) return { state: 'failed', message: `WeChat Pay refused the refund: ${e.code}: ${e.message}` };
      throw e;
    }
  }

  private async queryRefund(channel: GameChannel, r: RefundRequest): Promise<RefundState> {
    const s = channel.settings as WechatSettings;
    try {
      return refundState((await this.client.call(s, 'GET', `/v3/refund/domestic/refunds/${encodeURIComponent(r.refund_id)}`)).data);
    } catch (e) {
      if (e instanceof WechatPayRefusal && e.code === 'RESOURCE_NOT_EXISTS') return { state: 'failed', message: 'WeChat Pay has no such refund' };
      throw e;
    }
  }

  /** The day's successful payments: the trade bill (bill_type SUCCESS), downloaded and checked. */
  private async statement(channel: GameChannel, date: string): Promise<StatementEntry[]> {
    const s = channel.settings as WechatSettings;
    let d: Record<string, unknown>;
    try {
      d = (await this.client.call(s, 'GET', `/v3/bill/tradebill?bill_date=${encodeURIComponent(date)}&bill_type=SUCCESS`)).data;
    } catch (e) {
      // No bill for a day without payments.
      if (e instanceof WechatPayRefusal && e.code === 'NO_STATEMENT_EXIST') return [];
      throw e;
    }
    if (typeof d.download_url !== 'string' || typeof d.hash_value !== 'string' || d.hash_type !== 'SHA1') throw new Error("WeChat Pay's bill answer has no download_url or SHA1 hash_value");
    return parseTradeBill(await this.client.download(s, d.download_url, d.hash_value));
  }

  private async refusalsAs503(fn: () => Promise<WechatAnswer>): Promise<Record<string, unknown>> {
    try {
      return (await fn()).data;
    } catch (e) {
      if (e instanceof WechatPayRefusal) throw Errors.serviceUnavailable(`WeChat Pay refused to start the payment: ${e.code}: ${e.message}`);
      throw Errors.serviceUnavailable(`WeChat Pay cannot be reached: ${(e as Error).message}`);
    }
  }
}

/** A refund as WeChat Pay states it (answer of a refund or its query, decrypted refund callback). */
export function refundState(d: Record<string, unknown>): RefundState {
  const id = typeof d.refund_id === 'string' ? { provider_refund_id: d.refund_id } : {};
  const status = d.status ?? d.refund_status;
  if (status === 'SUCCESS') return { state: 'succeeded', ...id };
  if (status === 'CLOSED' || status === 'ABNORMAL') return { state: 'failed', message: `WeChat Pay reports the refund ${String(status)}`, ...id };
  return { state: 'pending', ...id };
}

function answerString(data: Record<string, unknown>, field: string): string {
  const v = data[field];
  if (typeof v !== 'string' || v.length === 0) throw Errors.serviceUnavailable(`WeChat Pay's answer has no ${field}`);
  return v;
}

/** WeChat Pay's time_expire: RFC 3339 in Beijing time. */
function rfc3339Beijing(ms: number): string {
  return `${new Date(ms + BEIJING_OFFSET_MS).toISOString().slice(0, 19)}+08:00`;
}
