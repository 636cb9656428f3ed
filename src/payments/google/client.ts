import { Errors } from '../../errors.js';
import type { OrderStatus } from '../../db/schema.js';
import type { OrderRow, OrderStore } from '../../orders/store.js';
import type { GooglePurchases } from './purchases.js';
import type { GooglePurchaseStore } from './store.js';

export interface SubmitBody {
  purchase_token: string;
  product_id: string;
  order_token?: string;
}

export interface GoogleClientDeps {
  purchases: GooglePurchases;
  store: GooglePurchaseStore;
  orders: OrderStore;
  /** The client API's order_token check (401 invalid_token). */
  authorize: (orderToken: string) => Promise<OrderRow>;
  /** Games whose `google` channel sells this store product id (a submission without an order token). */
  gamesSelling: (storeProductId: string) => Promise<string[]>;
}

/** How many games a submission without an order token may be tried against. */
const MAX_CANDIDATE_GAMES = 5;

/**
 * POST /v1/client/google/purchases (payments.md 3): the Android client hands over the purchase
 * token of a completed Play Billing purchase. The game is the order token's, or, when the
 * client has lost it (a purchase finished at the next start), the game that recorded the
 * token before or whose products sell this store product id. Safe to repeat.
 */
export class GoogleClient {
  constructor(private readonly d: GoogleClientDeps) {}

  async submit(body: SubmitBody): Promise<{ order_id: string; status: OrderStatus }> {
    const claimed = body.order_token === undefined ? undefined : await this.d.authorize(body.order_token);
    const games = await this.gamesOf(body, claimed);
    let lastRefusal: Error | undefined;
    for (const gameId of games) {
      const { channel, app } = await this.d.purchases.app(gameId);
      let p;
      try {
        p = await this.d.purchases.fetch(gameId, app, body.product_id, body.purchase_token);
      } catch (e) {
        // Another candidate game may own the token (several apps selling one product id).
        if (claimed || games.length === 1) throw e;
        lastRefusal = e as Error;
        continue;
      }
      const settled = await this.d.purchases.settle(gameId, channel, body.product_id, body.purchase_token, p);
      if (claimed && claimed.order_id !== settled.order_id) await this.d.purchases.claimFor(claimed, body.product_id, body.purchase_token, p);
      const order = (await this.d.orders.findById(this.d.orders.db, settled.order_id)) as OrderRow;
      return { order_id: order.order_id, status: order.status };
    }
    throw lastRefusal ?? Errors.paymentRejected(`no game sells Google Play product ${body.product_id} through the google channel`);
  }

  private async gamesOf(body: SubmitBody, claimed: OrderRow | undefined): Promise<string[]> {
    if (claimed) return [claimed.game_id];
    const known = await this.d.store.find(body.purchase_token);
    if (known) return [known.game_id];
    return (await this.d.gamesSelling(body.product_id)).slice(0, MAX_CANDIDATE_GAMES);
  }
}
