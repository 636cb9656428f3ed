/**
 * Operator roles (operators.md 1), lowest first: each includes the ones before it.
 * viewer: read everything in scope; support: + redeliver, cancel unpaid orders; developer: +
 * game settings except money; finance: + refunds, reconciliations; admin: + games, partners,
 * players, operators below owner; owner: + operators of every role.
 */
export const ROLES = ['viewer', 'support', 'developer', 'finance', 'admin', 'owner'] as const;
export type Role = (typeof ROLES)[number];

const RANK = new Map<string, number>(ROLES.map((r, i) => [r, i]));

/** Whether `role` includes `needed`. */
export function hasRole(role: Role, needed: Role): boolean {
  return (RANK.get(role) as number) >= (RANK.get(needed) as number);
}

/**
 * Who made an authenticated operator request. `games` null: every game. `actor` is what the
 * audit log records: the account's email, `api-key:<name>`, or `ADMIN_TOKEN`.
 */
export interface Principal {
  kind: 'token' | 'account' | 'api_key';
  actor: string;
  role: Role;
  games: string[] | null;
  /** The account (kind account), or the account that made the key (kind api_key, when one did). */
  operatorId: string | null;
  /** The console session the request came with (kind account). */
  sessionId: string | null;
}

/**
 * A principal and the client address its request came from (TRUST_PROXY applied): who the
 * audit log records as having made a change.
 */
export interface Caller extends Principal {
  address: string;
}

/** Whether a principal may see `gameId`. */
export function inScope(p: Pick<Principal, 'games'>, gameId: string): boolean {
  return p.games === null || p.games.includes(gameId);
}

/** Whether every game of `games` (null: every game) is within `p`'s scope. */
export function scopeCovers(p: Pick<Principal, 'games'>, games: string[] | null): boolean {
  if (p.games === null) return true;
  return games !== null && games.every((g) => p.games!.includes(g));
}
