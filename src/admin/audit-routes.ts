import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import { responses } from '../http/errors-schema.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import { listAudit } from './audit.js';
import { AuditPage, AuditQuery } from './audit-schemas.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

/**
 * The audit log of operator changes (who, from where, what, when), newest first. An account
 * limited to some games reads the entries about its games (operators.md 1).
 */
export function registerAuditRoutes(app: ApiApp, db: Kysely<DB>): void {
  app.get('/admin/v1/audit', {
    config: { auth: 'admin' },
    schema: {
      tags: ['admin'],
      summary: 'Audit log of operator changes, newest first',
      querystring: AuditQuery,
      response: responses({ 200: AuditPage }, [Errors.unauthorized, Errors.forbidden, Errors.notFound, Errors.rateLimited]),
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
