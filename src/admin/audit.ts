import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';

/**
 * Who made an operator change: the authenticated caller (an account's email, `api-key:<name>`,
 * `ADMIN_TOKEN`, `cli`) and the client address its request came from (TRUST_PROXY applied;
 * null when the change came from the command line).
 */
export interface Actor {
  actor: string;
  address: string | null;
}

export interface AuditEntry {
  by: Actor;
  action: string;
  target: string;
  /** The game the change is about; null: none (partners, operators, secrets). */
  game: string | null;
  detail?: unknown;
}

/** Records an operator change in the same transaction as the change itself. */
export async function recordAudit(db: Kysely<DB> | Transaction<DB>, ids: IdGenerator, at: number, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      audit_id: prefixedId('aud', ids),
      at,
      actor: entry.by.actor,
      address: entry.by.address,
      action: entry.action,
      target: entry.target,
      game_id: entry.game,
      detail: entry.detail === undefined ? null : JSON.stringify(entry.detail),
    })
    .execute();
}

export interface AuditFilter {
  action?: string;
  target?: string;
  actor?: string;
  game_id?: string;
}

/** Newest first; `before` is the last audit id of the previous page (ids are time-ordered). */
export async function listAudit(db: Kysely<DB>, filter: AuditFilter, before: string | null, limit: number) {
  let query = db.selectFrom('audit_log').selectAll().orderBy('audit_id', 'desc').limit(limit);
  if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.target) query = query.where('target', '=', filter.target);
  if (filter.actor) query = query.where('actor', '=', filter.actor);
  if (filter.game_id) query = query.where('game_id', '=', filter.game_id);
  if (before) query = query.where('audit_id', '<', before);
  const rows = await query.execute();
  return rows.map((r) => ({ ...r, detail: r.detail === null ? null : (JSON.parse(r.detail) as unknown) }));
}
