// Table types (db/schema.ts): payments, games' payment channels, payments and refunds open at providers, reconciliations and Google Play purchases.

/** A game's payment channel (payments.md 2): settings JSON, secrets sealed JSON. */
export interface GameChannelsTable {
  game_id: string;
  channel: string;
  enabled: number;
  settings: string;
  secrets_enc: string | null;
  created_at: number;
  updated_at: number;
}

export interface PaymentsTable {
  payment_id: string;
  order_id: string;
  provider: string;
  provider_txn_id: string;
  amount: number;
  currency: string;
  status: 'accepted' | 'flagged';
  late: number;
  detail: string | null;
  created_at: number;
  /** Null only for payments of unknown orders recorded before the column existed. */
  game_id: string | null;
  /** The store's environment (Apple `Production`/`Sandbox`/`Xcode`, ...); null for sandbox. */
  environment: string | null;
  /** What the store charged, in its storefront's currency (minor units); null when not a store. */
  store_amount: number | null;
  store_currency: string | null;
  /** Why a payment was flagged; null when accepted. */
  reason: string | null;
}

/** What a row the provider-payment job checks at the provider has: its checks and its claim. */
interface ProviderChecked {
  checks: number;
  next_check_at: number;
  locked_until: number;
  locked_by: string | null;
  created_at: number;
  updated_at: number;
}

/** A payment started at a web provider (wechat, alipay): migration 0014. */
export interface ProviderPaymentsTable extends ProviderChecked {
  provider: string;
  order_id: string;
  game_id: string;
  state: 'open' | 'paid' | 'closed';
  /** JSON: the client action handed out, by mode. */
  actions: string;
}

/** A refund requested from a provider (refund_id is our out_refund_no): migration 0014. */
export interface ProviderRefundsTable extends ProviderChecked {
  refund_id: string;
  provider: string;
  order_id: string;
  game_id: string;
  provider_txn_id: string;
  amount: number;
  currency: string;
  status: 'pending' | 'succeeded' | 'failed';
  provider_refund_id: string | null;
  actor: string;
  reason: string | null;
  /** JSON: the provider's last word (refusal message, state). */
  detail: string | null;
}

/** A (game, channel, day) the scheduled reconciliation takes on, once (migration 0020). */
export interface ReconciliationScheduleTable {
  game_id: string;
  channel: string;
  /** YYYY-MM-DD, Beijing time. */
  date: string;
  state: 'due' | 'done' | 'skipped';
  reconciliation_id: string | null;
  attempts: number;
  next_try_at: number;
  locked_until: number;
  locked_by: string | null;
  updated_at: number;
}

/** A reconciliation run (payments.md 6): migration 0015. */
export interface ReconciliationsTable {
  reconciliation_id: string;
  channel: string;
  game_id: string;
  /** YYYY-MM-DD, the provider's day (Beijing time). */
  date: string;
  status: 'matched' | 'differences' | 'failed';
  /** JSON: statement entries, stored payments of the day, differences. */
  counts: string | null;
  /** JSON: the list of differences. */
  differences: string | null;
  error: string | null;
  actor: string;
  created_at: number;
}

/** A verified Google Play purchase and what the service still owes it (0013_google_purchases). */
export interface GooglePurchasesTable {
  purchase_token: string;
  game_id: string;
  order_id: string;
  /** The store's product id (the SKU). */
  product_id: string;
  /** Google's order id (GPA....): the payment's provider_txn_id and what refunds name. */
  google_order_id: string | null;
  state: 'owed' | 'consumed' | 'rejected';
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}
