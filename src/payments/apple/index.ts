import { Errors } from '../../errors.js';
import type { Clock } from '../../lib/clock.js';
import type { ChannelSettings, GameChannel, PayableOrder, PaymentProvider, PaymentStart } from '../provider.js';
import type { PaymentStore } from '../store.js';
import { AppleSettings } from './settings.js';
import type { AppAccountTokens } from './store.js';

export interface AppleDeps {
  /** APPLE_ROOT_CERTS read (DER); the channel cannot be enabled without them. */
  rootCerts: Buffer[];
  tokens: AppAccountTokens;
  payments: PaymentStore;
  clock: Clock;
}

/**
 * The `apple` channel (payments.md 3-5): the client buys with StoreKit 2 under the order's
 * appAccountToken and submits Apple's signed transaction (transactions.ts); App Store Server
 * Notifications V2 report refunds and revocations (notifications.ts).
 */
export class AppleProvider implements PaymentProvider {
  readonly name = 'apple';
  readonly sandbox = false;
  readonly settingsBody = AppleSettings;
  readonly secretFields = [] as const;
  readonly hasCallbacks = true;
  readonly refundedByProvider = "App Store purchases are refunded by Apple: the player asks Apple (reportaproblem.apple.com), and Apple's REFUND notification refunds the order";

  constructor(private readonly d: AppleDeps) {}

  checkSettings(_settings: ChannelSettings): void {
    if (this.d.rootCerts.length === 0) throw Errors.invalidRequest("the apple channel cannot be enabled: APPLE_ROOT_CERTS is not configured (paths of Apple's root certificates, from https://www.apple.com/certificateauthority/)");
  }

  /** The StoreKit action: the product's App Store id and the order's appAccountToken. */
  async start(order: PayableOrder, _channel: GameChannel): Promise<PaymentStart> {
    const storeIds = await this.d.payments.storeProductIds(this.d.payments.db, order.game_id, order.product_id);
    const productId = storeIds?.apple;
    if (!productId) throw Errors.channelUnavailable(`product ${order.product_id} has no App Store product id (store_product_ids.apple)`);
    const token = await this.d.tokens.forOrder(order.order_id, this.d.clock.now());
    return { kind: 'pending', action: { type: 'storekit', product_id: productId, quantity: order.quantity, app_account_token: token } };
  }
}
