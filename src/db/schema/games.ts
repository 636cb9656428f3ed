// Table types (db/schema.ts): games, their signing keys and products.

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
