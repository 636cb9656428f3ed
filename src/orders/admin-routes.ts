import { Readable } from 'node:stream';
import { Type } from 'typebox';
import { actorOf } from '../admin/actor.js';
import { responses } from '../http/errors-schema.js';
import { AdminOrder, AdminOrderDetail, ExportOrdersQuery, ListOrdersQuery, OrderActionBody, OrderPage, OrderParams, RefundBody } from './admin-schemas.js';
import type { OrderAdminService } from './admin-service.js';
import { csvFilename, ordersCsv } from './csv.js';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';

const ADMIN_ERRORS = [Errors.unauthorized, Errors.notFound, Errors.rateLimited];

/** Operator API for orders (PROTOCOL 11). */
export function registerOrderAdminRoutes(app: ApiApp, orders: OrderAdminService): void {
  const admin = { auth: 'admin' as const };

  app.get('/admin/v1/orders', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Orders, newest first, cursor paging', querystring: ListOrdersQuery, response: responses({ 200: OrderPage }, ADMIN_ERRORS) },
    handler: async (req) => orders.list(req.query),
  });

  app.get('/admin/v1/orders.csv', {
    config: admin,
    schema: {
      tags: ['admin'],
      summary: "Every order the listing's filters match, newest first, as CSV (streamed; an attachment)",
      querystring: ExportOrdersQuery,
      response: { ...responses({}, ADMIN_ERRORS), 200: { description: 'CSV, one header line', content: { 'text/csv': { schema: Type.String() } } } },
    },
    handler: async (req, reply) => {
      const q = req.query;
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${csvFilename(q.game_id, Date.now())}"`)
        .header('cache-control', 'no-store')
        .send(csvStream(Readable.from(ordersCsv((p) => orders.list(p), q))));
    },
  });

  app.get('/admin/v1/orders/:order_id', {
    config: admin,
    schema: {
      tags: ['admin'],
      summary: 'An order with its events, payments and notifications (with their attempts)',
      params: OrderParams,
      response: responses({ 200: AdminOrderDetail }, ADMIN_ERRORS),
    },
    handler: async (req) => orders.detail(req.params.order_id),
  });

  app.post('/admin/v1/orders/:order_id/refund', {
    config: admin,
    schema: {
      tags: ['admin'],
      summary: 'Refund a paid or delivered order whole (wechat, alipay: refund_pending until the provider confirms; then a refund notification)',
      params: OrderParams,
      body: RefundBody,
      response: responses({ 200: AdminOrder }, [...ADMIN_ERRORS, Errors.invalidState]),
    },
    handler: async (req) => {
      const body = req.body;
      return orders.refund(req.params.order_id, actorOf(req), body.reason, body.amount);
    },
  });

  app.post('/admin/v1/orders/:order_id/cancel', {
    config: admin,
    schema: {
      tags: ['admin'],
      summary: 'Cancel an unpaid order',
      params: OrderParams,
      body: OrderActionBody,
      response: responses({ 200: AdminOrder }, [...ADMIN_ERRORS, Errors.invalidState]),
    },
    handler: async (req) => orders.cancel(req.params.order_id, actorOf(req), req.body.reason),
  });
}

/** The 200's schema is the CSV text; Fastify sends it as the stream produces it. */
function csvStream(stream: Readable): string {
  return stream as unknown as string;
}
