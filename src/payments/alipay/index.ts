import { Errors } from '../../errors.js';
import type { ChannelSettings, GameChannel, PayableOrder, PaymentProvider, PaymentStart, PayOptions } from '../provider.js';
import { beijingTime, readKeys, yuan, type AlipayClients } from './client.js';
import { ALIPAY_CURRENCY, AlipayGateway } from './gateway.js';
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

/**
 * The `alipay` channel (payments.md 1-5) through Alipay's OpenAPI with `alipay-sdk`: page pay
 * (PC) and WAP pay answer a signed gateway URL to open, App pay the order string the Alipay
 * App SDK pays with. The trade is the order: out_trade_no is the order id, total_amount its
 * amount in yuan, time_expire its expiry. Alipay's async notify confirms it (notify.ts); the
 * lost-callback job queries and closes it, and operator refunds are requested (gateway.ts).
 */
export class AlipayProvider implements PaymentProvider {
  readonly name = 'alipay';
  readonly sandbox = false;
  readonly settingsBody = AlipaySettings;
  readonly secretFields = ALIPAY_SECRET_FIELDS;
  readonly hasCallbacks = true;
  readonly modes = ['page', 'wap', 'app'] as const;
  readonly gateway: AlipayGateway;

  constructor(private readonly d: AlipayDeps) {
    this.gateway = new AlipayGateway(d.clients);
  }

  checkSettings(settings: ChannelSettings): void {
    readKeys(settings as AlipaySettings);
  }

  /** `mode` is one of `modes` (PaymentService checked it), page when absent. */
  async start(order: PayableOrder, channel: GameChannel, { mode = 'page' }: PayOptions): Promise<PaymentStart> {
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
