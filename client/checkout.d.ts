/**
 * Checkout client for web and H5 games (payments.md 3). Served by the service at
 * /sdk/v1/checkout.js; exported by the package as `combo-game-platform/checkout-client`.
 */

/** The order's status as the client API shows it (`created` past its expiry shows `expired`). */
export type OrderStatus = 'created' | 'paid' | 'delivered' | 'expired' | 'canceled' | 'refund_pending' | 'refund_failed' | 'refunded';

/** POST /v1/client/order: what a game client sees of its order. */
export interface ClientOrder {
  order_id: string;
  product_id: string;
  product_name: string;
  quantity: number;
  /** Minor units of `currency`. */
  amount: number;
  /** ISO 4217. */
  currency: string;
  status: OrderStatus;
  /** Unix seconds. */
  expires_at: number;
}

/** What the client does next to pay (payments.md 3); none for sandbox (paid at once). */
export type PaymentAction =
  | { type: 'storekit'; product_id: string; quantity: number; app_account_token: string }
  | { type: 'play_billing'; product_id: string; quantity: number; obfuscated_account_id: string }
  /** WeChat Pay H5, Alipay page and WAP pay: open `url` in the browser. */
  | { type: 'redirect'; url: string }
  /** WeChat Pay Native: show `code_url` as a QR code (qrCodeUrl draws it). */
  | { type: 'qr'; code_url: string }
  | { type: 'wechat_app'; params: { appid: string; partnerid: string; prepayid: string; package: string; noncestr: string; timestamp: string; sign: string } }
  | { type: 'alipay_app'; order_string: string };

/** POST /v1/client/pay: the order, and the action while the payment is open. */
export interface PayResult extends ClientOrder {
  action?: PaymentAction;
}

export type Channel = 'sandbox' | 'wechat' | 'alipay' | 'apple' | 'google';

export interface PayOptions {
  /** wechat: `native` (default), `h5`, `app`; alipay: `page` (default), `wap`, `app`. */
  mode?: string;
}

export interface OpenCheckoutOptions {
  /** `_blank` (default): a new tab or window; `_self`: this page goes to the checkout page. */
  target?: string;
}

export interface WaitOptions {
  /** Between two reads of the order; default 2000. */
  intervalMs?: number;
  /** Stops waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Called with the order at every read. */
  onStatus?: (order: ClientOrder) => void;
}

export interface CheckoutClientOptions {
  /**
   * The service's address (with its path prefix, if any), e.g. `https://pay.example.com`.
   * Default: the service this module was loaded from, when loaded from its /sdk/v1/checkout.js.
   */
  baseUrl?: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

export interface CheckoutClient {
  readonly baseUrl: string;
  /** The hosted checkout page of the order. */
  checkoutUrl(orderToken: string): string;
  /**
   * An SVG QR code of the order's WeChat Pay Native payment (started when none is open), for an
   * <img src>; the service does not answer it to scripts of other origins.
   */
  qrCodeUrl(orderToken: string): string;
  /** Opens the hosted checkout page; the window opened (null for `_self` or a blocked popup). */
  openCheckout(orderToken: string, options?: OpenCheckoutOptions): Window | null;
  /** Starts paying through `channel`; throws CheckoutError for a refusal. */
  pay(orderToken: string, channel: Channel | (string & {}), options?: PayOptions): Promise<PayResult>;
  getOrder(orderToken: string): Promise<ClientOrder>;
  /** Polls the order until it is no longer `created` (paid, expired, canceled...); that order. */
  waitForPayment(orderToken: string, options?: WaitOptions): Promise<ClientOrder>;
}

/** A refusal of the client API (its ErrorResponse), or `network_error` with status 0. */
export declare class CheckoutError extends Error {
  constructor(status: number, error: string, message: string);
  readonly status: number;
  /** `invalid_token`, `channel_unavailable`, `invalid_state`, `invalid_request`, `rate_limited`... */
  readonly error: string;
}

export declare function createCheckoutClient(options?: CheckoutClientOptions): CheckoutClient;

/** The functions of the client of the service this module was loaded from (/sdk/v1/checkout.js). */
export declare function openCheckout(orderToken: string, options?: OpenCheckoutOptions): Window | null;
export declare function pay(orderToken: string, channel: Channel | (string & {}), options?: PayOptions): Promise<PayResult>;
export declare function checkoutUrl(orderToken: string): string;
export declare function qrCodeUrl(orderToken: string): string;
export declare function getOrder(orderToken: string): Promise<ClientOrder>;
export declare function waitForPayment(orderToken: string, options?: WaitOptions): Promise<ClientOrder>;
