// Table types (db/schema.ts): operator accounts, and what the service keeps for itself: audit log, state, sealing keys.

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

/** Where each key that sealed stored secrets came from (migration 0017). */
export interface SealingKeysTable {
  key_id: string;
  /** 'SECRETS_KEY', or the key file's absolute path. */
  source: string;
  first_used_at: number;
}
