import type { Kysely, Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';

export interface AuditEntry {
  actor: string;
  action: string;
  target: string;
  detail?: unknown;
}

/** Records an operator change in the same transaction as the change itself. */
export async function recordAudit(db: Kysely<DB> | Transaction<DB>, ids: IdGenerator, at: number, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      audit_id: prefixedId('aud', ids),
      at,
      actor: entry.actor,
      action: entry.action,
      target: entry.target,
      detail: entry.detail === undefined ? null : JSON.stringify(entry.detail),
    })
    .execute();
}

export interface AuditFilter {
  action?: string;
  target?: string;
  actor?: string;
}

/** Newest first; `before` is the last audit id of the previous page (ids are time-ordered). */
export async function listAudit(db: Kysely<DB>, filter: AuditFilter, before: string | null, limit: number) {
  let query = db.selectFrom('audit_log').selectAll().orderBy('audit_id', 'desc').limit(limit);
  if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.target) query = query.where('target', '=', filter.target);
  if (filter.actor) query = query.where('actor', '=', filter.actor);
  if (before) query = query.where('audit_id', '<', before);
  const rows = await query.execute();
  return rows.map((r) => ({ ...r, detail: r.detail === null ? null : (JSON.parse(r.detail) as unknown) }));
}
