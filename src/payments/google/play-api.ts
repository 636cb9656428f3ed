import { createHash } from 'node:crypto';
import { androidpublisher, type androidpublisher_v3 } from '@googleapis/androidpublisher';
import { JWT } from 'google-auth-library';
import type { Logger } from 'pino';
import { Errors } from '../../errors.js';
import { minorUnitDigits } from '../../lib/currency-digits.js';

/** The service account a game gives for its Play Console app (its JSON key's fields). */
export interface PlayServiceAccount {
  client_email: string;
  private_key: string;
  /** Where tokens are asked for; Google's by default. */
  token_uri?: string;
}

export interface PlayApp {
  package_name: string;
  service_account: PlayServiceAccount;
}

export type ProductPurchase = androidpublisher_v3.Schema$ProductPurchase;

export interface PlayApiOptions {
  /** GOOGLE_API_BASE_URL: the Play Developer API's root. */
  baseUrl: string;
  /** Each request (and each token request) ends after this, as unavailable. */
  timeoutMs: number;
  log: Logger;
}

const SCOPE = 'https://www.googleapis.com/auth/androidpublisher';
/** Where google-auth-library asks for a service account's tokens, whatever its token_uri says. */
export const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';
const RETRY_AFTER = { 'retry-after': '5' };

/**
 * The Google Play Developer API for each game's app: service-account auth
 * (google-auth-library's JWT client: an RS256 assertion exchanged for an access token, cached
 * and refreshed by the library) and the calls the `google` channel makes. One client per game,
 * rebuilt when its settings change, so a game's access token is reused across requests.
 *
 * Failures map to the API's errors: Google unreachable, slow or failing (5xx, 429, time-out):
 * 503 `service_unavailable` with Retry-After, nothing changed, the client submits again; the
 * game's credentials refused: 503 too (the purchase stays unconsumed until the operator fixes
 * the settings), logged as an error naming the game.
 */
export class PlayApi {
  private readonly clients = new Map<string, { fingerprint: string; api: androidpublisher_v3.Androidpublisher }>();

  constructor(private readonly o: PlayApiOptions) {}

  /** purchases.products.get; undefined when Google does not know the token for this product. */
  async getPurchase(gameId: string, app: PlayApp, productId: string, token: string): Promise<ProductPurchase | undefined> {
    try {
      const r = await this.api(gameId, app).purchases.products.get({ packageName: app.package_name, productId, token });
      return r.data;
    } catch (e) {
      if (isUnknownPurchase(e)) return undefined;
      throw this.failure(e, gameId, 'purchases.products.get');
    }
  }

  /**
   * purchases.products.consume: the player may buy the product again. 'gone' when Google no
   * longer lets it be consumed (consumed already, refunded, unknown): nothing is left to do.
   */
  async consume(gameId: string, app: PlayApp, productId: string, token: string): Promise<'consumed' | 'gone'> {
    try {
      await this.api(gameId, app).purchases.products.consume({ packageName: app.package_name, productId, token });
      return 'consumed';
    } catch (e) {
      if (isUnknownPurchase(e)) return 'gone';
      throw this.failure(e, gameId, 'purchases.products.consume');
    }
  }

  /**
   * orders.get: what the buyer paid (the order's total, taxes and discounts included), in
   * minor units of the buyer's currency. Null when Google does not say or cannot be asked now:
   * the price is recorded for the operator, the payment does not depend on it.
   */
  async orderPrice(gameId: string, app: PlayApp, orderId: string): Promise<{ amount: number; currency: string } | null> {
    try {
      const r = await this.api(gameId, app).orders.get({ packageName: app.package_name, orderId });
      return minorUnits(r.data.total);
    } catch (e) {
      this.o.log.warn({ game_id: gameId, call: 'orders.get', status: statusOf(e), err: googleMessage(e) }, 'Google Play order price not read; the payment is recorded without it');
      return null;
    }
  }

  /** orders.refund (money back to the buyer, the item revoked); throws when Google refuses. */
  async refund(gameId: string, app: PlayApp, orderId: string): Promise<void> {
    try {
      await this.api(gameId, app).orders.refund({ packageName: app.package_name, orderId, revoke: true });
    } catch (e) {
      const status = statusOf(e);
      if (status !== undefined && status >= 400 && status < 500 && status !== 401 && status !== 403 && status !== 429 && !isTokenRefusal(e)) {
        throw Errors.invalidState(`Google Play refused the refund of order ${orderId}: ${googleMessage(e)}`);
      }
      throw this.failure(e, gameId, 'orders.refund');
    }
  }

  private api(gameId: string, app: PlayApp): androidpublisher_v3.Androidpublisher {
    const fingerprint = createHash('sha256')
      .update(JSON.stringify([app.package_name, app.service_account.client_email, app.service_account.private_key, app.service_account.token_uri ?? '']))
      .digest('base64');
    const cached = this.clients.get(gameId);
    if (cached?.fingerprint === fingerprint) return cached.api;
    const api = androidpublisher({
      version: 'v3',
      auth: this.jwt(app.service_account),
      rootUrl: this.o.baseUrl,
      timeout: this.o.timeoutMs,
      // The client submits again: one attempt per request keeps its answer prompt.
      retry: false,
    });
    this.clients.set(gameId, { fingerprint, api });
    return api;
  }

  private jwt(account: PlayServiceAccount): JWT {
    const jwt = new JWT({
      email: account.client_email,
      key: account.private_key,
      scopes: [SCOPE],
      transporterOptions: { timeout: this.o.timeoutMs, retry: false },
    });
    // The library always asks Google's token endpoint; a key's own token_uri (a private
    // deployment, the tests' stand-in) is honoured by redirecting that one request.
    const tokenUri = account.token_uri;
    if (tokenUri && tokenUri !== GOOGLE_TOKEN_URL) {
      jwt.transporter.interceptors.request.add({
        resolved: async (opts) => {
          if (String(opts.url) === GOOGLE_TOKEN_URL) opts.url = new URL(tokenUri);
          return opts;
        },
      });
    }
    return jwt;
  }

  private failure(e: unknown, gameId: string, call: string): Error {
    const status = statusOf(e);
    if (isTokenRefusal(e) || status === 401 || status === 403) {
      this.o.log.error({ game_id: gameId, call, status, google: googleMessage(e) }, 'Google Play refused the game\'s service account: check its google channel settings');
      return Errors.serviceUnavailable('Google Play refused the game\'s credentials; the purchase is kept, try again later', RETRY_AFTER);
    }
    this.o.log.warn({ game_id: gameId, call, status, err: googleMessage(e) }, 'Google Play unavailable');
    return Errors.serviceUnavailable('Google Play is unavailable; nothing was changed, try again', RETRY_AFTER);
  }
}

/** A Money (units, nanos) in minor units of its currency (ISO 4217 digits); null when it is not one. */
export function minorUnits(m: androidpublisher_v3.Schema$Money | undefined): { amount: number; currency: string } | null {
  const currency = m?.currencyCode;
  if (!m || !currency || !/^[A-Z]{3}$/.test(currency) || !/^-?\d{1,15}$/.test(m.units ?? '0')) return null;
  const digits = minorUnitDigits(currency);
  const amount = Number(m.units ?? '0') * 10 ** digits + Math.round((m.nanos ?? 0) / 10 ** (9 - digits));
  return Number.isSafeInteger(amount) ? { amount, currency } : null;
}

interface GaxiosLike {
  status?: number;
  response?: { status?: number; data?: unknown };
  message?: string;
}

function statusOf(e: unknown): number | undefined {
  const g = e as GaxiosLike | null;
  return g?.response?.status ?? g?.status;
}

/** The API's answer that the purchase token is not (or no longer) valid for this product. */
function isUnknownPurchase(e: unknown): boolean {
  const status = statusOf(e);
  return (status === 400 || status === 404 || status === 410) && !isTokenRefusal(e);
}

/** The token endpoint's OAuth error (invalid_grant: a wrong key, a deleted account). */
function isTokenRefusal(e: unknown): boolean {
  const data = (e as GaxiosLike | null)?.response?.data as { error?: unknown } | undefined;
  return typeof data?.error === 'string';
}

/** Google's error message, never a token or key (the library's messages carry neither). */
function googleMessage(e: unknown): string {
  const data = (e as GaxiosLike | null)?.response?.data as { error?: unknown; error_description?: unknown } | undefined;
  if (typeof data?.error === 'string') return `${data.error}${typeof data.error_description === 'string' ? `: ${data.error_description}` : ''}`;
  const nested = (data?.error as { message?: unknown } | undefined)?.message;
  if (typeof nested === 'string') return nested;
  // A network error's message names the URL, and a purchase URL holds the purchase token.
  return String((e as GaxiosLike | null)?.message ?? e)
    .replace(/https?:\/\/\S+/g, '<url>')
    .slice(0, 300);
}
