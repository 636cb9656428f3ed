import { createPrivateKey } from 'node:crypto';
import { Errors } from '../../errors.js';
import type { ChannelSettings, GameChannel, PayableOrder, PaymentProvider, PaymentStart } from '../provider.js';
import type { PaymentRow, PaymentStore } from '../store.js';
import type { PlayApi } from './play-api.js';
import { playApp } from './purchases.js';
import { GOOGLE_SECRET_FIELDS, GoogleSettings } from './settings.js';
import type { GooglePurchaseStore } from './store.js';

export interface GoogleProviderDeps {
  payments: PaymentStore;
  purchases: GooglePurchaseStore;
  api: PlayApi;
}

/**
 * The `google` channel (payments.md 3-5): the client buys with Play Billing under the order's
 * id as obfuscatedAccountId and submits the purchase token (client.ts); Real-time developer
 * notifications pay purchases no client submitted and refund voided ones (notifications.ts);
 * the consume job finishes purchases left unconsumed (consumer.ts); operator refunds go
 * through the Play Developer API's orders.refund.
 */
export class GoogleProvider implements PaymentProvider {
  readonly name = 'google';
  readonly sandbox = false;
  readonly settingsBody = GoogleSettings;
  readonly secretFields = GOOGLE_SECRET_FIELDS;
  readonly hasCallbacks = true;

  constructor(private readonly d: GoogleProviderDeps) {}

  /** The service account's key must be a private key the JWT client can sign with. */
  checkSettings(settings: ChannelSettings): void {
    const key = (settings.service_account as { private_key?: unknown } | undefined)?.private_key;
    if (typeof key !== 'string') return;
    try {
      if (createPrivateKey(key).asymmetricKeyType !== 'rsa') throw new Error('not RSA');
    } catch {
      throw Errors.invalidRequest("service_account.private_key is not an RSA private key in PEM (the service account key file's private_key)");
    }
  }

  /** The Play Billing action: the product's Google Play id, and the order id as obfuscatedAccountId. */
  async start(order: PayableOrder, _channel: GameChannel): Promise<PaymentStart> {
    const storeIds = await this.d.payments.storeProductIds(this.d.payments.db, order.game_id, order.product_id);
    const productId = storeIds?.google;
    if (!productId) throw Errors.channelUnavailable(`product ${order.product_id} has no Google Play product id (store_product_ids.google)`);
    return { kind: 'pending', action: { type: 'play_billing', product_id: productId, quantity: order.quantity, obfuscated_account_id: order.order_id } };
  }

  /**
   * An operator's refund (payments.md 5): Google's orders.refund, with the item revoked. Throws
   * (and nothing is changed) when Google refuses or cannot be reached.
   */
  async refund(payment: PaymentRow, channel: GameChannel): Promise<void> {
    const recorded = (await this.d.purchases.findByOrder(payment.order_id)).find((r) => (r.google_order_id || r.purchase_token) === payment.provider_txn_id);
    const googleOrderId = recorded?.google_order_id;
    if (!googleOrderId) throw Errors.invalidState(`Google Play gave order ${payment.order_id}'s purchase no order id: refund it in the Play Console`);
    await this.d.api.refund(channel.game_id, playApp(channel), googleOrderId);
  }
}
