// Table types (db/schema.ts): partners, their keys and games, and partner-user bindings.

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
