import { responses } from '../http/errors-schema.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import { toAdminPayment } from '../orders/admin-service.js';
import { ListPaymentsQuery, PaymentPage } from './schemas.js';
import type { PaymentStore } from './store.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const isCursor = (v: unknown) => Array.isArray(v) && v.length === 3 && v[0] === 'pay' && Number.isSafeInteger(v[1]) && typeof v[2] === 'string';

/** GET /admin/v1/payments: payments newest first, flagged ones for the operator to settle. */
export function registerPaymentAdminRoutes(app: ApiApp, store: PaymentStore): void {
  app.get('/admin/v1/payments', {
    config: { auth: 'admin' },
    schema: { tags: ['admin'], summary: 'Payments, newest first (`?status=flagged`: the ones to settle), cursor paging', querystring: ListPaymentsQuery, response: responses({ 200: PaymentPage }, [Errors.invalidRequest, Errors.unauthorized, Errors.rateLimited]) },
    handler: async (req) => {
      const q = req.query;
      const limit = q.limit ?? 50;
      const after = q.cursor === undefined ? null : decodeCursor<[string, number, string]>(q.cursor, isCursor);
      const rows = await store.list({ status: q.status, gameId: q.game_id, provider: q.provider, orderId: q.order_id }, after ? { createdAt: after[1], paymentId: after[2] } : null, limit + 1);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        data: page.map((p) => ({ ...toAdminPayment(p), order_id: p.order_id, game_id: p.game_id })),
        next_cursor: rows.length > limit && last ? encodeCursor(['pay', last.created_at, last.payment_id]) : null,
      };
    },
  });
}
