/**
 * One interface for every payment channel (PROTOCOL 10): start a payment for an order, verify
 * the provider's confirmation and map it to the order. `sandbox` is the first implementation;
 * real channels (a wallet, an app store) plug in behind the same three calls. The service
 * around it (PaymentService) owns idempotency per provider transaction id, the amount and
 * currency check, and the order's state change.
 */
export interface PaymentProvider {
  /** Channel name as the client sends it, and `payments.provider` in storage. */
  readonly name: string;
  /** Payments through this channel move no money: paid orders carry is_sandbox = 1. */
  readonly sandbox: boolean;
  /** Whether the game offers this channel (e.g. sandbox only where the operator allows it). */
  available(game: PayingGame): boolean;
  /** Starts paying an order: confirmed at once (sandbox), or an action for the client. */
  start(order: PayableOrder): Promise<PaymentStart>;
  /**
   * Checks a confirmation (a callback body, a receipt) really comes from the provider and
   * says what was paid. Throws an ApiError (src/errors.ts) when it does not verify; never
   * trusts the client's word.
   */
  verify(confirmation: unknown): Promise<VerifiedPayment>;
}

export interface PayingGame {
  sandbox_payments: number;
}

export interface PayableOrder {
  order_id: string;
  game_id: string;
  amount: number;
  currency: string;
  product_id: string;
  quantity: number;
}

export type PaymentStart =
  /** Paid already: hand `confirmation` to PaymentService.confirm. */
  | { kind: 'confirmed'; confirmation: unknown }
  /** The player must act (open `redirect_url`); the confirmation arrives later by callback. */
  | { kind: 'pending'; redirect_url: string };

/** What a verified confirmation says was paid. */
export interface VerifiedPayment {
  provider_txn_id: string;
  order_id: string;
  /** Minor units. */
  amount: number;
  currency: string;
}
