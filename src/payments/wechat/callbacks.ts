import type { Clock } from '../../lib/clock.js';
import { ApiError, Errors } from '../../errors.js';
import type { ChannelService } from '../channel-service.js';
import type { ProviderPayments } from '../provider-payments/service.js';
import { decryptResource, publicKey, signedHeaders, verificationFailure, type EncryptedResource } from './crypto.js';
import { refundState, type WechatProvider, type WechatTransaction } from './index.js';
import type { WechatSettings } from './settings.js';

export interface WechatCallbackDeps {
  provider: WechatProvider;
  channels: ChannelService;
  providerPayments: ProviderPayments;
  clock: Clock;
}

/** What a callback did, for its log line. */
export interface CallbackOutcome {
  event_type: string;
  order_id?: string | null;
  outcome?: string;
  reason?: string;
}

interface Notification {
  id?: unknown;
  event_type?: unknown;
  resource?: EncryptedResource;
}

interface RefundResource {
  mchid?: string;
  out_trade_no?: string;
  transaction_id?: string;
  out_refund_no?: string;
  refund_id?: string;
  refund_status?: string;
  amount?: { total?: number; refund?: number };
}

/**
 * WeChat Pay's callbacks at POST /v1/callbacks/wechat/:game_id (payments.md 4-5). Believed
 * only when `Wechatpay-Signature` verifies with the game's WeChat Pay public key (serial and
 * 5-minute window included) and the resource decrypts with its APIv3 key. TRANSACTION.SUCCESS
 * pays the order (as the lost-callback query would; an amount that differs is flagged); the
 * refund events settle our refund, or refund the order when made in the merchant portal. A
 * callback of another merchant or app is refused. Repeats change nothing.
 */
export class WechatCallbacks {
  constructor(private readonly d: WechatCallbackDeps) {}

  async receive(gameId: string, headers: Record<string, string | string[] | undefined>, body: string): Promise<CallbackOutcome> {
    const { provider, channels, clock } = this.d;
    const channel = (await channels.forGame(gameId)).get('wechat');
    if (!channel) throw Errors.notFound(`game ${gameId} has no wechat channel`);
    const s = channel.settings as WechatSettings;
    const failure = verificationFailure(signedHeaders(headers), body, s.wechatpay_public_key_id, provider.client.key(s.wechatpay_public_key, publicKey), Math.floor(clock.now() / 1000));
    if (failure) throw Errors.invalidSignature(`the callback is refused: ${failure}`);
    const n = parseObject<Notification>(body, 'the callback body');
    const type = typeof n.event_type === 'string' ? n.event_type : '';
    if (!n.resource || typeof n.resource !== 'object') throw Errors.invalidRequest('the callback has no resource');
    let plain: string;
    try {
      plain = decryptResource(n.resource, s.api_v3_key);
    } catch (e) {
      throw Errors.invalidRequest(`the callback's resource does not decrypt with the api_v3_key: ${(e as Error).message}`);
    }
    if (type === 'TRANSACTION.SUCCESS') return this.paid(s, parseObject<WechatTransaction>(plain, 'the resource'));
    if (type.startsWith('REFUND.')) return this.refund(type, s, parseObject<RefundResource>(plain, 'the resource'));
    return { event_type: type, outcome: 'ignored' };
  }

  private async paid(s: WechatSettings, t: WechatTransaction): Promise<CallbackOutcome> {
    const payment = this.d.provider.paymentOf(s, t);
    if (!payment) return { event_type: 'TRANSACTION.SUCCESS', order_id: t.out_trade_no ?? null, outcome: `ignored (${t.trade_state ?? 'no trade_state'})` };
    const outcome = await this.d.providerPayments.applyPaid('wechat', payment);
    return { event_type: 'TRANSACTION.SUCCESS', order_id: outcome.order_id, outcome: outcome.replay ? `${outcome.status} (replay)` : outcome.status, ...(outcome.reason ? { reason: outcome.reason } : {}) };
  }

  private async refund(type: string, s: WechatSettings, r: RefundResource): Promise<CallbackOutcome> {
    if (r.mchid !== s.mchid) throw Errors.paymentRejected("the refund is another merchant's (mchid differs from the game's wechat channel)");
    const state = refundState({ refund_status: r.refund_status, refund_id: r.refund_id });
    const done = await this.d.providerPayments.reportRefund('wechat', {
      refund_id: r.out_refund_no ?? null,
      provider_refund_id: r.refund_id ?? null,
      provider_txn_id: r.transaction_id ?? null,
      order_id: r.out_trade_no ?? null,
      state: state.state,
      amount: r.amount?.refund ?? null,
      total: r.amount?.total ?? null,
      ...(state.state === 'failed' ? { message: state.message } : {}),
    });
    return { event_type: type, order_id: done.order_id, outcome: done.settled };
  }
}

function parseObject<T>(text: string, what: string): T {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw Errors.invalidRequest(`${what} is not JSON`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw Errors.invalidRequest(`${what} is not a JSON object`);
  return v as T;
}

/**
 * WeChat Pay's failure answer `{code: "FAIL", message}`, with the ErrorResponse `error` of
 * this service alongside (rest-interface 2.7), and its status.
 */
export function failureAnswer(e: unknown): { status: number; body: { code: 'FAIL'; error: string; message: string } } {
  if (e instanceof ApiError) return { status: e.status, body: { code: 'FAIL', error: e.code, message: e.message } };
  return { status: 500, body: { code: 'FAIL', error: 'internal_error', message: 'internal error; send it again later' } };
}
