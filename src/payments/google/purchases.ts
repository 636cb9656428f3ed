import type { Logger } from 'pino';
import { Errors, isApiError } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import type { OrderRow, OrderStore } from '../../orders/store.js';
import type { GameChannel, StorePurchase, VerifiedPayment } from '../provider.js';
import { refusalOf, type PaymentOutcome, type PaymentService } from '../service.js';
import type { PlayApi, PlayApp, ProductPurchase } from './play-api.js';
import type { GooglePurchaseRow, GooglePurchaseStore } from './store.js';

export interface GooglePurchasesDeps {
  api: PlayApi;
  store: GooglePurchaseStore;
  payments: PaymentService;
  orders: OrderStore;
  /** The game's `google` channel (secrets opened), or undefined when it has none. */
  channel: (gameId: string) => Promise<GameChannel | undefined>;
  clock: Clock;
  log: Logger;
}

/** The first retry of a consume that failed; each later one waits twice as long, up to an hour. */
export const CONSUME_RETRY_MS = 30_000;
const CONSUME_RETRY_MAX_MS = 3_600_000;

export interface Settled {
  order_id: string;
  outcome: PaymentOutcome;
}

/** `purchaseType` of a test purchase (a license tester's): no money moves. */
const TEST_PURCHASE = 0;

/**
 * Google Play one-time purchases (payments.md 3-4): a purchase token, whoever reports it (the
 * client's submission, a Real-time developer notification, the consume job), is settled the
 * same way: asked of the Play Developer API, checked (purchased, not pending or canceled; test
 * purchases only where the game accepts them; `obfuscatedExternalAccountId` an order of this
 * game), recorded as owed, applied as a payment (PaymentService: at most one order per
 * purchase, product and quantity as the order says), then consumed.
 *
 * The owed record is written before the payment, and marked consumed only once Google has
 * consumed the purchase: a crash or a Google failure between the two leaves it owed, and the
 * consume job (GoogleConsumer) finishes it. A purchase that paid nothing is not consumed:
 * Google refunds an unacknowledged purchase by itself after three days.
 */
export class GooglePurchases {
  constructor(private readonly d: GooglePurchasesDeps) {}

  /** The enabled `google` channel of a game and its API credentials; 403 when it has none. */
  async app(gameId: string): Promise<{ channel: GameChannel; app: PlayApp }> {
    const channel = await this.d.channel(gameId);
    if (!channel?.enabled) throw Errors.channelUnavailable('payment channel google is not available for this game');
    return { channel, app: playApp(channel) };
  }

  /** Asks Google about a purchase token; 422 when Google does not know it for this product. */
  async fetch(gameId: string, app: PlayApp, productId: string, token: string): Promise<ProductPurchase> {
    const p = await this.d.api.getPurchase(gameId, app, productId, token);
    if (!p) throw Errors.paymentRejected(`Google Play does not know this purchase token for product ${productId}`);
    return p;
  }

  /**
   * Settles a purchase Google reported for this game: pays the order it names, once, and
   * consumes it. The same purchase again answers the same (a replay). Throws 422
   * payment_rejected (409 for the order's state) when it pays nothing.
   */
  async settle(gameId: string, channel: GameChannel, productId: string, token: string, p: ProductPurchase): Promise<Settled> {
    if (p.purchaseState === 2) throw Errors.paymentRejected('the purchase is pending (purchaseState 2): submit it again once Google Play has completed it');
    if (p.purchaseState !== 0) throw Errors.paymentRejected(`the purchase is not purchased (purchaseState ${p.purchaseState ?? 'missing'}: canceled)`);
    const sandbox = p.purchaseType === TEST_PURCHASE;
    if (sandbox && channel.settings.accept_sandbox === false) throw Errors.paymentRejected('test purchases (purchaseType 0) are not accepted by this game');
    const order = p.obfuscatedExternalAccountId ? await this.d.orders.findById(this.d.orders.db, p.obfuscatedExternalAccountId) : undefined;
    if (!order || order.game_id !== gameId) {
      throw Errors.paymentRejected("the purchase's obfuscatedExternalAccountId names no order of this game (set it to the order_id of the play_billing action)");
    }
    const known = await this.d.store.find(token);
    // Consumed by someone else (another server, an earlier integration): it cannot pay here.
    if (p.consumptionState === 1 && !known) throw Errors.paymentRejected('the purchase was consumed already and paid no order of this service');

    const now = this.d.clock.now();
    if (!known) {
      await this.d.store.recordOwed({
        purchase_token: token,
        game_id: gameId,
        order_id: order.order_id,
        product_id: productId,
        google_order_id: p.orderId ?? null,
        next_attempt_at: now + CONSUME_RETRY_MS,
        created_at: now,
      });
    }
    // The price as the store charged it, asked once (a replay's payment is recorded already).
    const price = !known && p.orderId ? await this.d.api.orderPrice(gameId, playApp(channel), p.orderId) : null;
    const outcome = await this.d.payments.apply('google', paymentOf(order, productId, token, p, sandbox, price));
    if (outcome.status !== 'accepted') {
      if (!known || known.state === 'owed') await this.d.store.settle(token, 'rejected', this.d.clock.now(), outcome.reason ?? 'flagged');
      throw refusalOf(outcome);
    }
    if (known?.state !== 'consumed') await this.consume(gameId, playApp(channel), { purchase_token: token, product_id: productId });
    return { order_id: order.order_id, outcome };
  }

  /**
   * A purchase submitted for an order it was not made for (its token with another order's
   * token): the purchase is settled for its own order, and the claim on the other one is kept
   * as a flagged payment (a purchase pays at most one order) and refused.
   */
  async claimFor(other: OrderRow, productId: string, token: string, p: ProductPurchase): Promise<never> {
    const outcome = await this.d.payments.apply('google', paymentOf(other, productId, token, p, p.purchaseType === TEST_PURCHASE, null));
    throw outcome.status === 'accepted'
      ? Errors.internal('a Google purchase was accepted for a second order')
      : refusalOf(outcome);
  }

  /**
   * Consumes a settled purchase; on failure it stays owed, for the consume job, and the
   * caller's answer does not depend on it (the order is paid).
   */
  async consume(gameId: string, app: PlayApp, row: Pick<GooglePurchaseRow, 'purchase_token' | 'product_id'>): Promise<boolean> {
    try {
      const r = await this.d.api.consume(gameId, app, row.product_id, row.purchase_token);
      await this.d.store.settle(row.purchase_token, 'consumed', this.d.clock.now(), r === 'gone' ? 'Google no longer lets it be consumed' : null);
      return true;
    } catch (e) {
      this.d.log.warn({ game_id: gameId, err: isApiError(e) ? e.message : String(e) }, 'Google Play purchase not consumed yet; the consume job retries it');
      await this.d.store.noteError(row.purchase_token, isApiError(e) ? e.message : String(e), this.d.clock.now()).catch(() => undefined);
      return false;
    }
  }

  /** When the consume job tries an owed purchase again after `attempts` tries. */
  static retryDelay(attempts: number): number {
    return Math.min(CONSUME_RETRY_MS * 2 ** Math.min(attempts, 20), CONSUME_RETRY_MAX_MS);
  }
}

function paymentOf(order: OrderRow, productId: string, token: string, p: ProductPurchase, sandbox: boolean, price: StorePurchase['price']): VerifiedPayment {
  return {
    // Google's order id is what the Play Console shows and refunds name; a purchase without
    // one is known by its token.
    provider_txn_id: p.orderId || token,
    order_id: order.order_id,
    store: { product_id: productId, quantity: p.quantity ?? 1, price },
    environment: sandbox ? 'Test' : 'Production',
    sandbox,
  };
}

/** A `google` channel's API credentials (payments.md 2). */
export function playApp(channel: GameChannel): PlayApp {
  const s = channel.settings as { package_name: string; service_account: PlayApp['service_account'] };
  return { package_name: s.package_name, service_account: s.service_account };
}
