import { Errors } from '../errors.js';
import type { GameSnapshot } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import type { OrderRow, OrderStore } from '../orders/store.js';
import { parseOrderToken, tokenSecretMatches } from '../orders/token.js';
import type { GameChannel, PayOptions } from '../payments/provider.js';
import type { PaymentService } from '../payments/service.js';
import type { ClientOrder, ClientPayResponse } from './schemas.js';

export interface CheckoutDeps {
  orders: OrderStore;
  games: (gameId: string) => Promise<GameSnapshot | null>;
  payments: PaymentService;
  /** The game's payment channels (payments/channel-service.ts). */
  channels: (gameId: string) => Promise<ReadonlyMap<string, GameChannel>>;
  clock: Clock;
}

/** Channels the hosted checkout page can pay through, in the order it offers them. */
export const WEB_CHANNELS = ['wechat', 'alipay', 'sandbox'] as const;
export type WebChannel = (typeof WEB_CHANNELS)[number];

/** WeChat Pay and Alipay take CNY only (payments.md 1): the page offers them for CNY orders. */
const CNY_ONLY: ReadonlySet<WebChannel> = new Set(['wechat', 'alipay']);

/** What the hosted checkout page shows. */
export interface CheckoutView {
  order: ClientOrder;
  /** The web channels the game has enabled that can pay this order. */
  channels: WebChannel[];
}

const ALREADY_PAID = new Set(['paid', 'delivered', 'refund_pending', 'refund_failed', 'refunded']);

/**
 * The client purchase API (PROTOCOL 10): a game client holding an order_token reads its order
 * and pays it. The token is the credential: unknown, forged or tampered -> 401 invalid_token,
 * the same answer for each so a caller learns nothing about which orders exist.
 */
export class CheckoutService {
  constructor(private readonly d: CheckoutDeps) {}

  async view(token: string): Promise<ClientOrder> {
    const order = await this.authorize(token);
    return this.toClient(order);
  }

  async page(token: string): Promise<CheckoutView> {
    const order = await this.authorize(token);
    const [snap, channels] = await Promise.all([this.d.games(order.game_id), this.d.channels(order.game_id)]);
    const usable = WEB_CHANNELS.filter((c) => channels.get(c)?.enabled === true && (!CNY_ONLY.has(c) || order.currency === 'CNY'));
    return { order: await this.toClient(order, snap), channels: usable };
  }

  /**
   * The code_url of the order's WeChat Pay Native payment (payments.md 3), started as
   * /v1/client/pay starts it: the one still open is answered again, so asking twice starts
   * one payment. 409 invalid_state when the order is paid, expired or canceled.
   */
  async wechatCodeUrl(token: string, clientIp: string): Promise<string> {
    const paid = await this.pay(token, 'wechat', { mode: 'native', client_ip: clientIp });
    if (paid.action?.type !== 'qr') throw Errors.invalidState(`order ${paid.order_id} is ${paid.status} and cannot be paid`);
    return paid.action.code_url;
  }

  /**
   * Pays the order through `channel`. An order already paid answers its status (a retry or a
   * second tab); an expired or canceled one cannot start a payment (409 invalid_state).
   */
  async pay(token: string, channel: string, opts: PayOptions = { mode: undefined, client_ip: '' }): Promise<ClientPayResponse> {
    const order = await this.authorize(token);
    const status = this.clientStatus(order);
    if (ALREADY_PAID.has(status)) return this.toClient(order);
    if (status !== 'created') throw Errors.invalidState(`order ${order.order_id} is ${status} and cannot be paid`);
    const snap = await this.d.games(order.game_id);
    if (!snap) throw Errors.invalidToken('order_token is not valid');
    const result = await this.d.payments.pay(order, await this.d.channels(order.game_id), channel, opts);
    // The order as the payment left it; read again only when this payment did not change it.
    const after = (result.kind === 'confirmed' && result.order) || ((await this.d.orders.findById(this.d.orders.db, order.order_id)) as OrderRow);
    const view = await this.toClient(after, snap);
    if (result.kind === 'pending') return { ...view, action: result.action };
    // The order changed under the payment (canceled, or expired and then handled elsewhere).
    if (!ALREADY_PAID.has(view.status)) throw Errors.invalidState(`order ${order.order_id} is ${view.status} and cannot be paid`);
    return view;
  }

  /** The order behind a token; 401 invalid_token for an unknown, forged or tampered one. */
  async authorize(token: string): Promise<OrderRow> {
    const parsed = parseOrderToken(token);
    const order = parsed ? await this.d.orders.findById(this.d.orders.db, parsed.orderId) : undefined;
    // Compare against a dummy when the order is unknown, so both refusals cost the same.
    const ok = tokenSecretMatches(order?.token_secret ?? 'x'.repeat(32), parsed?.secret ?? '');
    if (!order || !ok) throw Errors.invalidToken('order_token is not valid');
    return order;
  }

  clientStatus(order: OrderRow): ClientOrder['status'] {
    // The sweeper moves it to `expired` within seconds; the client sees it at once.
    return order.status === 'created' && this.d.clock.now() >= order.expires_at ? 'expired' : order.status;
  }

  private async toClient(order: OrderRow, snap?: GameSnapshot | null): Promise<ClientOrder> {
    const game = snap === undefined ? await this.d.games(order.game_id) : snap;
    return {
      order_id: order.order_id,
      product_id: order.product_id,
      product_name: game?.products.get(order.product_id)?.name ?? order.product_id,
      quantity: order.quantity,
      amount: order.amount,
      currency: order.currency,
      status: this.clientStatus(order),
      expires_at: Math.floor(order.expires_at / 1000),
    };
  }
}
