import type { TObject } from 'typebox';

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
  readonly settingsBody: TObject;
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
   * Starts paying an order: confirmed at once (sandbox), or an action for the client. `mode`
   * is the client's choice among the channel's ways of paying (payments.md 3: wechat native,
   * h5, app; alipay page, wap, app); undefined: the channel's default.
   */
  start(order: PayableOrder, channel: GameChannel, mode?: PaymentMode): Promise<PaymentStart>;
  /**
   * Checks a confirmation really comes from the provider and says what was paid. Throws an
   * ApiError (src/errors.ts) when it does not verify; never trusts the client's word.
   */
  verify?(confirmation: unknown): Promise<VerifiedPayment>;
}

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
  /** Unix ms; the provider's payment is set to end then (alipay time_expire). */
  expires_at?: number;
}

/** The ways of paying a web channel offers (payments.md 3, `mode` of /v1/client/pay). */
export type PaymentMode = 'native' | 'h5' | 'app' | 'page' | 'wap';

/** What a client does next to pay (payments.md 3, the `action` of /v1/client/pay). */
export type PaymentAction =
  | { type: 'storekit'; product_id: string; quantity: number; app_account_token: string }
  | { type: 'play_billing'; product_id: string; quantity: number; obfuscated_account_id: string }
  | { type: 'redirect'; url: string }
  | { type: 'alipay_app'; order_string: string };

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
