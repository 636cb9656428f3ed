import type { SignedDataVerifier } from '@apple/app-store-server-library';
import { Errors } from '../../errors.js';
import type { ChannelService } from '../channel-service.js';
import type { PaymentService } from '../service.js';
import type { AppleSettings } from './settings.js';
import { verifyTransaction, type AppleTransactions } from './transactions.js';
import { isAppleEnvironment, unverifiedPayload, verificationRefusal } from './verifier.js';

export interface AppleNotificationDeps {
  payments: PaymentService;
  channels: ChannelService;
  transactions: AppleTransactions;
}

/** What a notification did, for the log line of the callback. */
export interface NotificationOutcome {
  notification_type: string;
  subtype?: string;
  environment: string;
  transaction_id?: string;
  /** REFUND/REVOKE: the order refunded (null: the transaction paid no order here). */
  order_id?: string | null;
  refunded?: boolean;
}

const REVERSALS = new Set(['REFUND', 'REVOKE']);

/**
 * App Store Server Notifications V2 at POST /v1/callbacks/apple/:game_id (payments.md 4-5).
 * The signed payload is verified as a transaction is (APPLE_ROOT_CERTS, the game's bundle id,
 * app Apple id for Production). REFUND and REVOKE of a transaction that paid an order refund
 * the order, and the game gets its `refund` notification after its ship_order. Sandbox
 * notifications are handled whatever accept_sandbox says: a refund of a purchase accepted
 * earlier still refunds. Other types are answered 200 and only logged.
 */
export class AppleNotifications {
  constructor(private readonly d: AppleNotificationDeps) {}

  async receive(gameId: string, signedPayload: string): Promise<NotificationOutcome> {
    const channel = (await this.d.channels.forGame(gameId)).get('apple');
    if (!channel) throw Errors.notFound(`game ${gameId} has no apple channel`);
    const claimed = unverifiedPayload(signedPayload, 'signedPayload');
    const data = (claimed.data ?? claimed.summary ?? claimed.appData) as { environment?: unknown } | undefined;
    const environment = data?.environment;
    if (!isAppleEnvironment(environment)) throw Errors.invalidRequest("signedPayload's environment is not Production, Sandbox, Xcode or LocalTesting");
    if (environment === 'Production' && (channel.settings as AppleSettings).app_apple_id === undefined) {
      throw Errors.paymentRejected("a Production notification cannot be verified: the game's apple channel has no app_apple_id");
    }
    const verifier: SignedDataVerifier = await this.d.transactions.verifierFor(channel, environment);
    let decoded;
    try {
      decoded = await verifier.verifyAndDecodeNotification(signedPayload);
    } catch (e) {
      throw verificationRefusal(e, 'the notification');
    }
    const type = String(decoded.notificationType ?? '');
    const out: NotificationOutcome = { notification_type: type, environment, ...(decoded.subtype ? { subtype: String(decoded.subtype) } : {}) };
    if (!REVERSALS.has(type)) return out;
    const signedTransaction = decoded.data?.signedTransactionInfo;
    if (!signedTransaction) throw Errors.invalidRequest(`a ${type} notification without data.signedTransactionInfo`);
    const txn = await verifyTransaction(verifier, signedTransaction, "the notification's transaction");
    if (!txn.transactionId) throw Errors.invalidRequest(`a ${type} notification whose transaction has no transactionId`);
    const r = await this.d.payments.reverse('apple', txn.transactionId, `App Store ${type}${decoded.subtype ? ` (${String(decoded.subtype)})` : ''}`);
    return { ...out, transaction_id: txn.transactionId, order_id: r?.order_id ?? null, refunded: r?.refunded ?? false };
  }
}
