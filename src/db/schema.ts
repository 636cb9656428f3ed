import type { Generated } from 'kysely';

/**
 * Table types for Kysely. Times are integer Unix ms, money integer minor units, booleans 0/1
 * integers (the same on SQLite and PostgreSQL).
 */
export interface GamesTable {
  game_id: string;
  name: string;
  iap_enabled: number;
  sandbox_payments: number;
  order_ttl_seconds: number;
  gm_url: string | null;
  rate_limit_per_second: number;
  nppa_app_id: string | null;
  nppa_biz_id: string | null;
  nppa_secret_enc: string | null;
  /** The key the game last signed a server API request with (operators.md 2); null: never called. */
  last_used_key_id: string | null;
  created_at: number;
  updated_at: number;
  /** The last failed GM request (bindings/gm.ts), for the operator; null when none failed. */
  gm_last_error: string | null;
  gm_last_error_at: number | null;
}

export interface GameKeysTable {
  key_id: string;
  game_id: string;
  secret_enc: string;
  created_at: number;
}

export interface ProductsTable {
  game_id: string;
  product_id: string;
  name: string;
  price: number;
  currency: string;
  active: number;
  /** JSON `{apple?, google?}`: the product's ids in the app stores; null when none. */
  store_product_ids: string | null;
  created_at: number;
  updated_at: number;
}

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

/** The StoreKit appAccountToken (UUID) handed out for an order. */
export interface OrderAccountTokensTable {
  app_account_token: string;
  order_id: string;
  created_at: number;
}

export type OrderStatus = 'created' | 'paid' | 'delivered' | 'expired' | 'canceled' | 'refund_pending' | 'refund_failed' | 'refunded';

export interface OrdersTable {
  order_id: string;
  game_id: string;
  reference_id: string;
  combo_id: string;
  product_id: string;
  platform: string;
  notify_url: string;
  quantity: number;
  meta: string | null;
  context: string | null;
  amount: number;
  currency: string;
  status: OrderStatus;
  token_secret: string;
  /**
   * Legacy: a hash of the create-order parameters, written until replays began comparing the
   * stored parameters themselves (OrderService, sameParameters). New orders store ''; nothing
   * reads it. Kept rather than dropped: dropping it rewrites the largest table.
   */
  is_sandbox: number;
  late_payment: number;
  created_at: number;
  expires_at: number;
  updated_at: number;
  paid_at: number | null;
  delivered_at: number | null;
  expired_at: number | null;
  canceled_at: number | null;
  refunded_at: number | null;
}

/**
 * An order's state changes. Its creation is not one of them: the order row records it
 * (`created_at`) and the admin timeline shows it from there. Orders created before that have a
 * stored creation event (`from_status` null), which the timeline shows instead.
 */
export interface OrderEventsTable {
  event_id: string;
  order_id: string;
  from_status: string | null;
  to_status: string;
  at: number;
  detail: string | null;
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

/** A payment started at a web provider (wechat, alipay): migration 0014. */
export interface ProviderPaymentsTable {
  provider: string;
  order_id: string;
  game_id: string;
  state: 'open' | 'paid' | 'closed';
  /** JSON: the client action handed out, by mode. */
  actions: string;
  checks: number;
  next_check_at: number;
  locked_until: number;
  locked_by: string | null;
  created_at: number;
  updated_at: number;
}

/** A refund requested from a provider (refund_id is our out_refund_no): migration 0014. */
export interface ProviderRefundsTable {
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
  checks: number;
  next_check_at: number;
  locked_until: number;
  locked_by: string | null;
  created_at: number;
  updated_at: number;
}

/** A reconciliation run (payments.md 6): migration 0015. */
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

export type NotificationStatus = 'pending' | 'succeeded' | 'failed' | 'gone';

export interface NotificationsTable {
  notification_id: string;
  order_id: string;
  game_id: string;
  type: 'ship_order' | 'refund';
  notify_url: string;
  body: string;
  status: NotificationStatus;
  attempts: number;
  next_attempt_at: number;
  locked_until: number;
  locked_by: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  delivered_at: number | null;
  /** Start of the retry window; null = created_at (added by 0002_notifications_window). */
  window_started_at: number | null;
}

export interface NotificationAttemptsTable {
  attempt_id: string;
  notification_id: string;
  at: number;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_snippet: string | null;
}

/**
 * Sessions are compliance data and are never deleted; on SQLite the player index beside the
 * database (db/player-index.ts) also relies on it: a new row's rowid is above every committed one.
 * A retention that deleted sessions would have to keep the row with the largest rowid.
 */
export interface SessionsTable {
  game_id: string;
  session_id: string;
  combo_id: string;
  entered_at: number | null;
  left_at: number | null;
  close_reason: 'leave' | 'timeout' | null;
  created_at: number;
}

export interface NppaEventsTable {
  event_id: string;
  game_id: string;
  session_id: string;
  combo_id: string;
  bt: number;
  ot_ms: number;
  status: 'pending' | 'uploaded' | 'failed' | 'skipped';
  attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  created_at: number;
  uploaded_at: number | null;
  /** Claim of the uploader that is sending the event (0 / null: unclaimed). */
  locked_until: number;
  locked_by: string | null;
  /** The `ot` (Unix seconds) actually accepted, when re-timed; ot_ms keeps the original. */
  sent_ot: number | null;
  /** The national system's error code of the last failed attempt. */
  errcode: number | null;
  /** Times the event was answered 3005 (bad time) and re-timed: each send moves it 5 s further back. */
  retime: number;
  /** The identity it was accepted with: the `pi`, '' for a guest; null until accepted (migration 0007). */
  sent_pi: string | null;
}

/** Per game: which process uploads (a lease) and the upload state all processes share. */
export interface NppaLeasesTable {
  game_id: string;
  owner: string;
  expires_at: number;
  /** The game sends nothing before this (Unix ms): a 1006 block, a back-off, a backlog's pace. */
  paused_until: number;
  /** Delay added to the recorded times of the game's backlog (ms) as of shift_at, 0 when none. */
  shift_ms: number;
  /** When shift_ms was saved (Unix ms): it shrinks from then (uploader.ts, CATCH_UP). */
  shift_at: number;
  /** The latest `ot` (Unix s) accepted for the game. */
  last_ot: number;
}

export interface PlayersTable {
  game_id: string;
  combo_id: string;
  pi: string | null;
  birth_date: string | null;
  banned: number;
  created_at: number;
  updated_at: number;
}

export interface PartnersTable {
  partner_id: string;
  name: string;
  enabled: number;
  rate_limit_per_second: number;
  created_at: number;
  updated_at: number;
}

export interface PartnerKeysTable {
  key_id: string;
  partner_id: string;
  secret_enc: string;
  created_at: number;
}

export interface PartnerGamesTable {
  partner_id: string;
  game_id: string;
}

export interface BindingsTable {
  game_id: string;
  partner_id: string;
  partner_user_id: string;
  combo_id: string;
  role_id: string;
  bound_at: number;
}

export interface AuditLogTable {
  audit_id: string;
  at: number;
  actor: string;
  action: string;
  target: string;
  detail: string | null;
  /** The client address of the request (TRUST_PROXY applied); null for the CLI (migration 0023). */
  address: string | null;
  /** The game the entry is about; null: none (partners, operators, secrets). */
  game_id: string | null;
}

export interface ServiceStateTable {
  name: string;
  value: string;
  updated_at: number;
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

export interface DB {
  games: GamesTable;
  game_keys: GameKeysTable;
  products: ProductsTable;
  orders: OrdersTable;
  order_events: OrderEventsTable;
  payments: PaymentsTable;
  game_channels: GameChannelsTable;
  order_account_tokens: OrderAccountTokensTable;
  provider_payments: ProviderPaymentsTable;
  provider_refunds: ProviderRefundsTable;
  reconciliations: ReconciliationsTable;
  reconciliation_schedule: ReconciliationScheduleTable;
  notifications: NotificationsTable;
  notification_attempts: NotificationAttemptsTable;
  sessions: SessionsTable;
  nppa_events: NppaEventsTable;
  nppa_leases: NppaLeasesTable;
  players: PlayersTable;
  partners: PartnersTable;
  partner_keys: PartnerKeysTable;
  partner_games: PartnerGamesTable;
  bindings: BindingsTable;
  audit_log: AuditLogTable;
  service_state: ServiceStateTable;
  google_purchases: GooglePurchasesTable;
  sealing_keys: SealingKeysTable;
  operators: OperatorsTable;
  operator_invitations: OperatorInvitationsTable;
  operator_sessions: OperatorSessionsTable;
  operator_api_keys: OperatorApiKeysTable;
}

/** Where each key that sealed stored secrets came from (migration 0017). */
export interface SealingKeysTable {
  key_id: string;
  /** 'SECRETS_KEY', or the key file's absolute path. */
  source: string;
  first_used_at: number;
}

// Kept for tables that may later gain generated columns.
export type { Generated };

/** Operator accounts (migration 0021, operators.md 1); `games` is a JSON array or null (every game). */
export interface OperatorsTable {
  operator_id: string;
  email: string;
  name: string;
  role: string;
  games: string | null;
  /** scrypt (src/operators/passwords.ts); null until the invitation is accepted. */
  password_hash: string | null;
  /** Sealed TOTP secret: set when enrolment starts, in force once totp_enabled_at is set. */
  totp_secret: string | null;
  totp_enabled_at: number | null;
  /** The TOTP time step of the last accepted code: a code of this step or an earlier one is refused. */
  totp_last_step: number | null;
  disabled_at: number | null;
  created_by: string;
  created_at: number;
  updated_at: number;
}

export interface OperatorInvitationsTable {
  /** SHA-256 of the invitation token (hex). */
  token_hash: string;
  operator_id: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface OperatorSessionsTable {
  session_id: string;
  /** SHA-256 of the session cookie's value (hex). */
  token_hash: string;
  operator_id: string;
  created_at: number;
  last_seen_at: number;
  revoked_at: number | null;
  address: string;
  user_agent: string;
  /** How the session was signed in: 'password' or 'oidc'. */
  method: string;
}

export interface OperatorApiKeysTable {
  key_id: string;
  /** SHA-256 of the key (hex). */
  key_hash: string;
  name: string;
  role: string;
  games: string | null;
  created_by: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}
