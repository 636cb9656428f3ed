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
