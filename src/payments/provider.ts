import type { TBoolean, TObject } from 'typebox';
import type { PaymentRow } from './store.js';

/**
 * One interface for every payment channel (PROTOCOL 10, payments.md 1). A channel is one
 * folder (src/payments/sandbox/, src/payments/apple/, ...) exporting a PaymentProvider: the
 * body of its game settings (payments.md 2), how a payment starts, and how a confirmation
 * handed to PaymentService.confirm is verified. Channels that verify something else (a signed
 * App Store transaction, a Play purchase token, a provider callback) do so in their own routes
 * and hand the result to PaymentService.apply. PaymentService owns the rules common to every
 * channel: at most one order per provider transaction, ever; amount, or product and quantity,
 * as the order says; the order's state change.
 */
export interface PaymentProvider {
  /** Channel name as the client sends it, `game_channels.channel` and `payments.provider`. */
  readonly name: string;
  /** Payments through this channel move no money: paid orders carry is_sandbox = 1. */
  readonly sandbox: boolean;
  /** The game settings body of PUT /admin/v1/games/:game_id/channels/:channel (with `enabled`). */
  readonly settingsBody: TObject<{ enabled: TBoolean }>;
  /**
   * Paths (dotted) of the settings that are secrets: sealed at rest, never returned (`"***"`),
   * `***` in the audit log.
   */
  readonly secretFields: readonly string[];
  /** Whether the channel answers provider callbacks at /v1/callbacks/:channel/:game_id. */
  readonly hasCallbacks: boolean;
  /**
   * Set when only the provider can refund its payments (App Store): an operator refund of an
   * order it paid is refused (409) with this message (payments.md 5).
   */
  readonly refundedByProvider?: string;
  /** Refuses settings this service cannot honour (400 invalid_request), e.g. missing configuration. */
  checkSettings?(settings: ChannelSettings): void;
  /**
   * The ways a client may pay through this channel (`mode` of /v1/client/pay), the default
   * first; none when the channel has one way only (a mode given is then refused).
   */
  readonly modes?: readonly string[];
  /** Starts paying an order: confirmed at once (sandbox), or an action for the client. */
  start(order: PayableOrder, channel: GameChannel, opts: PayOptions): Promise<PaymentStart>;
  /**
   * Checks a confirmation really comes from the provider and says what was paid. Throws an
   * ApiError (src/errors.ts) when it does not verify; never trusts the client's word.
   */
  verify?(confirmation: unknown): Promise<VerifiedPayment>;
  /**
   * An operator's refund of a payment through this channel (payments.md 5): the provider
   * returns the money. Throws an ApiError, changing nothing, when the provider refuses or
   * cannot be reached. Channels without it refund the order at once.
   */
  refund?(payment: PaymentRow, channel: GameChannel): Promise<void>;
  /**
   * Channels whose payments stay open at the provider until paid or closed (WeChat Pay,
   * Alipay): the lost-callback job queries and closes them, and operator refunds are requested
   * from them (src/payments/provider-payments/).
   */
  readonly gateway?: ProviderGateway;
}

/** What /v1/client/pay says besides the channel. */
export interface PayOptions {
  /** One of the provider's `modes` (its default when absent). */
  mode: string | undefined;
  /** The client's address as this service sees it (WeChat H5 needs it). */
  client_ip: string;
}

/**
 * A provider's API for payments it holds open (out_trade_no = our order id) and for refunds
 * that return money (out_refund_no = our refund id). Each method throws on a failure that
 * says nothing about the payment (network, 5xx): the job tries again later.
 */
export interface ProviderGateway {
  /** The payment as the provider has it. */
  queryPayment(channel: GameChannel, order: PayableOrder): Promise<ProviderPaymentState>;
  /** Closes the payment so it can no longer be paid; done when already closed. */
  closePayment(channel: GameChannel, order: PayableOrder): Promise<void>;
  /** Asks for the whole payment back. */
  requestRefund(channel: GameChannel, refund: RefundRequest): Promise<RefundState>;
  /** The refund as the provider has it. */
  queryRefund(channel: GameChannel, refund: RefundRequest): Promise<RefundState>;
  /**
   * The provider's statement of the payments it received on `date` (YYYY-MM-DD, the provider's
   * day: Beijing time), for reconciliation (payments.md 6).
   */
  statement?(channel: GameChannel, date: string): Promise<StatementEntry[]>;
}

/** A payment the provider's statement lists. */
export interface StatementEntry {
  provider_txn_id: string;
  order_id: string;
  /** Minor units. */
  amount: number;
  currency: string;
}

export type ProviderPaymentState =
  /** Paid: apply it (PaymentService.apply, as a callback would). */
  | { state: 'paid'; payment: VerifiedPayment }
  /** Not paid yet (or unknown to the provider: the player has not opened it). */
  | { state: 'open' }
  /** Closed, revoked or failed: it can no longer be paid. */
  | { state: 'closed'; detail?: string };

export interface RefundRequest {
  refund_id: string;
  order_id: string;
  provider_txn_id: string;
  /** The whole payment (minor units); refunds are never partial. */
  amount: number;
  currency: string;
  reason: string | null;
}

export type RefundState =
  | { state: 'pending'; provider_refund_id?: string }
  | { state: 'succeeded'; provider_refund_id?: string }
  /** The provider refused or gave up; `message` says why (shown to the operator). */
  | { state: 'failed'; provider_refund_id?: string; message: string };

/** A channel's settings as stored: the PUT body without `enabled`, secrets included. */
export type ChannelSettings = Record<string, unknown>;

/** One game's channel, as the payment paths see it (secrets opened). */
export interface GameChannel {
  game_id: string;
  channel: string;
  enabled: boolean;
  settings: ChannelSettings;
}

export interface PayableOrder {
  order_id: string;
  game_id: string;
  amount: number;
  currency: string;
  product_id: string;
  quantity: number;
  /** Unix ms; a provider's payment is set to end then (alipay time_expire). */
  expires_at?: number;
}

/** What a client does next to pay (payments.md 3, the `action` of /v1/client/pay). */
export type PaymentAction =
  | { type: 'storekit'; product_id: string; quantity: number; app_account_token: string }
  | { type: 'play_billing'; product_id: string; quantity: number; obfuscated_account_id: string }
  | { type: 'redirect'; url: string }
  | { type: 'qr'; code_url: string }
  | { type: 'wechat_app'; params: WechatAppParams }
  | { type: 'alipay_app'; order_string: string };

/** What the WeChat Open SDK's PayReq takes (payments.md 3). */
export interface WechatAppParams {
  appid: string;
  partnerid: string;
  prepayid: string;
  package: string;
  noncestr: string;
  timestamp: string;
  sign: string;
}

export type PaymentStart =
  /** Paid already: hand `confirmation` to PaymentService.confirm. */
  | { kind: 'confirmed'; confirmation: unknown }
  /** The player must act (`action`); the confirmation arrives later (client submission, callback). */
  | { kind: 'pending'; action: PaymentAction };

/**
 * What a verified confirmation says was paid. Web channels report the money (checked against
 * the order's amount and currency); app stores report the store's product and quantity
 * (checked against the product's store id and the order's quantity) and the price the store
 * charged in its storefront, which is recorded while the order keeps its catalogue price.
 */
export interface VerifiedPayment {
  provider_txn_id: string;
  order_id: string;
  /** Minor units; web channels and sandbox. */
  amount?: number;
  currency?: string;
  store?: StorePurchase;
  /** The provider's environment (Apple `Production`, `Sandbox`, `Xcode`, ...). */
  environment?: string;
  /** This payment moved no money (a store's test purchase); the provider's `sandbox` otherwise. */
  sandbox?: boolean;
}

export interface StorePurchase {
  /** The store's product id (payments.md 2: a product's store_product_ids). */
  product_id: string;
  quantity: number;
  /** The price the store charged, minor units of its storefront currency; null when not said. */
  price: { amount: number; currency: string } | null;
}
