import { actorOf } from '../../admin/actor.js';
import { responses } from '../../http/errors-schema.js';
import { toView, type ReconciliationService } from './service.js';
import { ListReconciliationsQuery, Reconciliation, ReconciliationList, RunReconciliationBody } from './schemas.js';
import { Errors } from '../../errors.js';
import type { ApiApp } from '../../http/route-info.js';

/** Reconciliation (payments.md 6): run one (channel, game, day) and list the stored results. */
export function registerReconciliationRoutes(app: ApiApp, service: ReconciliationService): void {
  const admin = { auth: 'admin' as const };
  app.post('/admin/v1/reconciliations', {
    config: admin,
    schema: { tags: ['admin'], summary: "Reconcile a channel's statement of a day with the stored payments (wechat, alipay)", body: RunReconciliationBody, response: responses({ 200: Reconciliation }, [Errors.unauthorized, Errors.notFound, Errors.rateLimited]) },
    handler: async (req) => {
      const b = req.body;
      return toView(await service.run(b.channel, b.game_id, b.date, actorOf(req)));
    },
  });
  app.get('/admin/v1/reconciliations', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Reconciliation results, newest first', querystring: ListReconciliationsQuery, response: responses({ 200: ReconciliationList }, [Errors.unauthorized, Errors.rateLimited]) },
    handler: async (req) => {
      const q = req.query;
      return { data: (await service.list({ ...q, limit: q.limit ?? 50 })).map(toView) };
    },
  });
}
