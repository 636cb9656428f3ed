import type { Logger } from 'pino';
import { Errors, isApiError } from '../../errors.js';
import type { GameChannel } from '../provider.js';
import type { PaymentService } from '../service.js';
import { playApp, type GooglePurchases } from './purchases.js';
import type { PushTokenVerifier } from './push-token.js';
import type { GooglePurchaseStore } from './store.js';

export interface GoogleNotificationsDeps {
  purchases: GooglePurchases;
  store: GooglePurchaseStore;
  payments: PaymentService;
  verifier: PushTokenVerifier;
  /** The URL Google pushes to for a game (the audience when the game set no push_audience). */
  callbackUrl: (gameId: string) => string;
  log: Logger;
}

/** RTDN oneTimeProductNotification.notificationType */
const ONE_TIME_PRODUCT_PURCHASED = 1;
/** RTDN voidedPurchaseNotification.productType of a one-time product. */
const VOIDED_ONE_TIME_PRODUCT = 2;

interface DeveloperNotification {
  packageName?: unknown;
  oneTimeProductNotification?: { notificationType?: unknown; purchaseToken?: unknown; sku?: unknown };
  voidedPurchaseNotification?: { purchaseToken?: unknown; orderId?: unknown; productType?: unknown; refundType?: unknown };
  testNotification?: unknown;
}

/**
 * Real-time developer notifications (payments.md 4), pushed by Pub/Sub to
 * /v1/callbacks/google/:game_id: the push's OIDC token is verified (issuer Google, audience the
 * game's push_audience, else its callback URL, which is Pub/Sub's default audience), then
 * - ONE_TIME_PRODUCT_PURCHASED: the purchase is settled as if its client had submitted it (the
 *   client may never come back): the order it names is paid and the purchase consumed;
 * - a voided one-time purchase: the order it paid is refunded (its `refund` notification goes
 *   to the game after the order's ship_order);
 * - anything else (test notifications, subscriptions, a canceled pending purchase): logged.
 *
 * Answers: 204 once handled, or when retrying could not change the outcome (a purchase that
 * pays nothing, an unknown token, another app's package); 401 for a bad token and 503 while
 * Google or the database is unavailable, which Pub/Sub retries with back-off.
 */
export class GoogleNotifications {
  constructor(private readonly d: GoogleNotificationsDeps) {}

  /** Resolves when the push is handled (answered 204: Pub/Sub acknowledges it); throws otherwise (retried). */
  async handle(gameId: string, authorization: string | undefined, body: unknown): Promise<void> {
    const { channel, app } = await this.d.purchases.app(gameId);
    const audience = typeof channel.settings.push_audience === 'string' ? channel.settings.push_audience : this.d.callbackUrl(gameId);
    await this.d.verifier.verify(authorization, audience);
    const n = decodePush(body);
    const log = this.d.log.child({ game_id: gameId });
    if (n.packageName !== app.package_name) {
      log.warn({ package_name: String(n.packageName) }, 'Google notification for another package ignored');
      return;
    }
    const purchase = n.oneTimeProductNotification;
    if (purchase?.notificationType === ONE_TIME_PRODUCT_PURCHASED && typeof purchase.purchaseToken === 'string' && typeof purchase.sku === 'string') {
      return this.purchased(gameId, channel, purchase.sku, purchase.purchaseToken, log);
    }
    const voided = n.voidedPurchaseNotification;
    if (voided?.productType === VOIDED_ONE_TIME_PRODUCT && typeof voided.purchaseToken === 'string') {
      return this.voided(gameId, voided.purchaseToken, typeof voided.orderId === 'string' ? voided.orderId : undefined, log);
    }
    log.info({ kind: Object.keys(n).filter((k) => k.endsWith('Notification')) }, 'Google notification recorded and ignored');
  }

  private async purchased(gameId: string, channel: GameChannel, sku: string, token: string, log: Logger): Promise<void> {
    try {
      const p = await this.d.purchases.fetch(gameId, playApp(channel), sku, token);
      const settled = await this.d.purchases.settle(gameId, channel, sku, token, p);
      log.info({ order_id: settled.order_id, replay: settled.outcome.replay }, 'Google purchase settled from its notification');
    } catch (e) {
      // Refused for good: a notification again would be refused the same way.
      if (isApiError(e) && (e.status === 422 || e.status === 409)) {
        log.warn({ err: e.message }, 'Google purchase notification pays nothing');
        return;
      }
      throw e;
    }
  }

  private async voided(gameId: string, token: string, googleOrderId: string | undefined, log: Logger): Promise<void> {
    const known = await this.d.store.find(token);
    if (!known || known.game_id !== gameId) {
      log.warn({ google_order_id: googleOrderId }, 'voided Google purchase paid no order here; ignored');
      return;
    }
    const txn = known.google_order_id || token;
    const r = await this.d.payments.reverse('google', txn, 'Google Play voided the purchase');
    log.info({ order_id: known.order_id, refunded: r?.refunded ?? false }, 'voided Google purchase');
  }
}

/** The developer notification inside a Pub/Sub push body (`message.data`, base64 JSON). */
function decodePush(body: unknown): DeveloperNotification {
  const data = (body as { message?: { data?: unknown } } | null)?.message?.data;
  if (typeof data !== 'string' || data.length > 65_536) throw Errors.invalidRequest('not a Pub/Sub push: message.data (base64) is missing');
  try {
    const n = JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as unknown;
    if (n && typeof n === 'object' && !Array.isArray(n)) return n as DeveloperNotification;
  } catch {
    // answered below
  }
  throw Errors.invalidRequest('message.data is not a developer notification (base64 JSON)');
}

