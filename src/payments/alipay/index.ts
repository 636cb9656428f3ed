import { Errors } from '../../errors.js';
import type { ChannelSettings, GameChannel, PayableOrder, PaymentMode, PaymentProvider, PaymentStart } from '../provider.js';
import { beijingTime, readKeys, yuan, type AlipayClients } from './client.js';
import { ALIPAY_SECRET_FIELDS, AlipaySettings } from './settings.js';

export interface AlipayDeps {
  clients: AlipayClients;
  /** The notify_url of a game's alipay channel (PUBLIC_BASE_URL/v1/callbacks/alipay/:game_id). */
  notifyUrl: (gameId: string) => string;
}

/** Alipay's method and product for each mode of /v1/client/pay (payments.md 3). */
const MODES = {
  page: { method: 'alipay.trade.page.pay', product_code: 'FAST_INSTANT_TRADE_PAY' },
  wap: { method: 'alipay.trade.wap.pay', product_code: 'QUICK_WAP_WAY' },
  app: { method: 'alipay.trade.app.pay', product_code: 'QUICK_MSECURITY_PAY' },
} as const;
type AlipayMode = keyof typeof MODES;

/** Alipay trades are of an order's own amount in CNY. */
export const ALIPAY_CURRENCY = 'CNY';

/**
 * The `alipay` channel (payments.md 1-5) through Alipay's OpenAPI with `alipay-sdk`: page pay
 * (PC) and WAP pay answer a signed gateway URL to open, App pay the order string the Alipay
 * App SDK pays with. The trade is the order: out_trade_no is the order id, total_amount its
 * amount in yuan, time_expire its expiry. Alipay's async notify confirms it (notify.ts).
 */
export class AlipayProvider implements PaymentProvider {
  readonly name = 'alipay';
  readonly sandbox = false;
  readonly settingsBody = AlipaySettings;
  readonly secretFields = ALIPAY_SECRET_FIELDS;
  readonly hasCallbacks = true;

  constructor(private readonly d: AlipayDeps) {}

  checkSettings(settings: ChannelSettings): void {
    readKeys(settings as AlipaySettings);
  }

  async start(order: PayableOrder, channel: GameChannel, mode: PaymentMode = 'page'): Promise<PaymentStart> {
    if (!Object.hasOwn(MODES, mode)) throw Errors.invalidRequest(`mode ${mode} is not one of alipay's: page (default), wap, app`);
    if (order.currency !== ALIPAY_CURRENCY) throw Errors.channelUnavailable(`alipay takes payments in CNY only; order ${order.order_id} is in ${order.currency}`);
    const { method, product_code } = MODES[mode as AlipayMode];
    const settings = channel.settings as AlipaySettings;
    const bizContent: Record<string, unknown> = {
      out_trade_no: order.order_id,
      total_amount: yuan(order.amount),
      subject: order.product_id,
      product_code,
      ...(order.expires_at !== undefined ? { time_expire: beijingTime(order.expires_at) } : {}),
    };
    const notifyUrl = this.d.notifyUrl(order.game_id);
    const { clients } = this.d;
    if (mode === 'app') return { kind: 'pending', action: { type: 'alipay_app', order_string: clients.orderString(settings, method, bizContent, notifyUrl) } };
    return { kind: 'pending', action: { type: 'redirect', url: clients.pageUrl(settings, method, bizContent, notifyUrl) } };
  }
}
