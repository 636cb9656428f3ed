// Table types (db/schema.ts): orders, their state changes and their StoreKit tokens.

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

/** The StoreKit appAccountToken (UUID) handed out for an order. */
export interface OrderAccountTokensTable {
  app_account_token: string;
  order_id: string;
  created_at: number;
}
