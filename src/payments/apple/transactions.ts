import type { JWSTransactionDecodedPayload, SignedDataVerifier } from '@apple/app-store-server-library';
import { Errors } from '../../errors.js';
import { minorUnitDigits } from '../../lib/currency-digits.js';
import type { OrderRow, OrderStore } from '../../orders/store.js';
import type { ChannelService } from '../channel-service.js';
import type { GameChannel } from '../provider.js';
import { refusalOf, type PaymentService } from '../service.js';
import type { AppleSettings } from './settings.js';
import type { AppAccountTokens } from './store.js';
import { isAppleEnvironment, unverifiedPayload, verificationRefusal, type AppleEnvironment, type AppleVerifiers } from './verifier.js';

export interface AppleTransactionDeps {
  payments: PaymentService;
  channels: ChannelService;
  tokens: AppAccountTokens;
  orders: OrderStore;
  verifiers: AppleVerifiers;
  /** The order behind an order_token; 401 invalid_token otherwise (the client API's rule). */
  authorize: (orderToken: string) => Promise<OrderRow>;
  /** The order's status as the client API shows it. */
  clientStatus: (order: OrderRow) => string;
}

/**
 * POST /v1/client/apple/transactions (payments.md 3): a StoreKit 2 transaction the client
 * submits, verified against APPLE_ROOT_CERTS and the game's apple channel (bundle id, app
 * Apple id, environment), pays the order its appAccountToken was handed out for. Submitting it
 * again (an unfinished transaction at the next start) gives the same answer.
 */
export class AppleTransactions {
  constructor(private readonly d: AppleTransactionDeps) {}

  async submit(signedTransaction: string, orderToken?: string): Promise<{ order_id: string; status: string }> {
    const { payments, orders } = this.d;
    const given = orderToken === undefined ? undefined : await this.d.authorize(orderToken);
    const claimed = unverifiedPayload(signedTransaction, 'signed_transaction');
    const order = await this.orderOf(claimed, given);
    const channel = await this.appleChannel(order.game_id);
    const environment = checkEnvironment(claimed.environment, channel.settings as AppleSettings);
    const txn = await verifyTransaction(await this.verifierFor(channel, environment), signedTransaction, 'the signed transaction');
    if (txn.revocationDate !== undefined) throw Errors.paymentRejected('the transaction is refused: Apple has refunded or revoked it');
    if (!txn.transactionId || !txn.productId) throw Errors.paymentRejected('the transaction is refused: it has no transactionId or productId');
    const outcome = await payments.apply('apple', {
      provider_txn_id: txn.transactionId,
      order_id: order.order_id,
      store: { product_id: txn.productId, quantity: txn.quantity ?? 1, price: storePrice(txn) },
      environment,
      sandbox: environment !== 'Production',
    });
    if (outcome.status === 'flagged') throw refusalOf(outcome);
    const after = (await orders.findById(orders.db, order.order_id)) as OrderRow;
    return { order_id: after.order_id, status: this.d.clientStatus(after) };
  }

  /** The verifier of a game's apple channel for data of `environment`. */
  verifierFor(channel: GameChannel, environment: AppleEnvironment): Promise<SignedDataVerifier> {
    const s = channel.settings as AppleSettings;
    return this.d.verifiers.of(s.bundle_id, environment === 'Production' ? s.app_apple_id : undefined, environment);
  }

  private async orderOf(claimed: Record<string, unknown>, given: OrderRow | undefined): Promise<OrderRow> {
    const token = claimed.appAccountToken;
    if (typeof token !== 'string' || token.length === 0) throw Errors.paymentRejected('the transaction is refused: it carries no appAccountToken (buy with the app_account_token that /v1/client/pay answered)');
    const orderId = await this.d.tokens.orderOf(token);
    if (orderId === undefined) throw Errors.paymentRejected('the transaction is refused: its appAccountToken names no order of this service');
    if (given && given.order_id !== orderId) throw Errors.paymentRejected("the transaction is refused: its appAccountToken is another order's, not order_token's");
    const order = given ?? (await this.d.orders.findById(this.d.orders.db, orderId));
    if (!order) throw Errors.paymentRejected('the transaction is refused: its appAccountToken names no order of this service');
    return order;
  }

  private async appleChannel(gameId: string): Promise<GameChannel> {
    const channel = (await this.d.channels.forGame(gameId)).get('apple');
    if (!channel?.enabled) throw Errors.channelUnavailable('payment channel apple is not available for this game');
    return channel;
  }
}

/** The environment the data claims, if the game accepts it (verification checks the claim). */
export function checkEnvironment(claimed: unknown, settings: AppleSettings): AppleEnvironment {
  if (!isAppleEnvironment(claimed)) throw Errors.paymentRejected('the transaction is refused: its environment is not Production, Sandbox, Xcode or LocalTesting');
  if (claimed === 'Production' && settings.app_apple_id === undefined) throw Errors.paymentRejected("Production transactions are refused: the game's apple channel has no app_apple_id");
  if (claimed !== 'Production' && settings.accept_sandbox === false) throw Errors.paymentRejected(`${claimed} transactions are refused: the game's apple channel does not accept sandbox purchases (accept_sandbox false)`);
  return claimed;
}

export async function verifyTransaction(verifier: SignedDataVerifier, jws: string, what: string): Promise<JWSTransactionDecodedPayload> {
  try {
    return await verifier.verifyAndDecodeTransaction(jws);
  } catch (e) {
    throw verificationRefusal(e, what);
  }
}

/** Apple's price (milliunits of the storefront currency) in minor units; null when not given. */
function storePrice(txn: JWSTransactionDecodedPayload): { amount: number; currency: string } | null {
  if (typeof txn.price !== 'number' || typeof txn.currency !== 'string' || !/^[A-Z]{3}$/.test(txn.currency)) return null;
  return { amount: Math.round((txn.price * 10 ** minorUnitDigits(txn.currency)) / 1000), currency: txn.currency };
}
