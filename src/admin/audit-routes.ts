import type { Kysely } from 'kysely';
import { Type, type Static } from 'typebox';
import type { DB } from '../db/schema.js';
import { responses } from '../http/errors-schema.js';
import { PageCursor, PageLimit } from '../http/paging.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import { listAudit } from './audit.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const AuditQuery = Type.Object({
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'e.g. game.update, order.refund' })),
  target: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'exact target, e.g. a game id or game/key' })),
  actor: Type.Optional(Type.String({ minLength: 1, maxLength: 264 })),
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
type AuditQuery = Static<typeof AuditQuery>;

const AuditEntry = Type.Object({
  audit_id: Type.String(),
  at: Type.Integer({ description: 'Unix ms' }),
  actor: Type.String({ description: 'the authenticated caller: an account\'s email, "api-key:<name>", "ADMIN_TOKEN"; "cli" for rotate-secrets' }),
  action: Type.String(),
  target: Type.String(),
  detail: Type.Unknown({ description: 'what was changed (secrets never appear)' }),
});

/** The audit log of operator changes (who, what, when), newest first. */
export function registerAuditRoutes(app: ApiApp, db: Kysely<DB>): void {
  app.get('/admin/v1/audit', {
    config: { auth: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Audit log of operator changes, newest first',
      querystring: AuditQuery,
      response: responses({ 200: Type.Object({ data: Type.Array(AuditEntry), next_cursor: Type.Union([Type.String(), Type.Null()]) }) }, [Errors.unauthorized, Errors.rateLimited]),
    },
    handler: async (req) => {
      const q = req.query;
      const limit = q.limit ?? 50;
      const before = q.cursor ? decodeCursor<string>(q.cursor, (v) => typeof v === 'string' && /^aud_[0-9A-Za-z]{1,60}$/.test(v)) : null;
      const rows = await listAudit(db, q, before, limit + 1);
      const page = rows.slice(0, limit);
      return { data: page, next_cursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.audit_id) : null };
    },
  });
}
