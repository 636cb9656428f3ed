import type { FastifyInstance } from 'fastify';
import { Type, type Static } from 'typebox';
import { actorOf } from '../../admin/actor.js';
import { GameId } from '../../games/schemas.js';
import { responses } from '../../http/errors-schema.js';
import { PageLimit } from '../../http/paging.js';
import { toView, type ReconciliationService } from './service.js';

const Channel = Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9_]+$' });
const RunBody = Type.Object(
  {
    channel: Channel,
    game_id: GameId,
    date: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: "YYYY-MM-DD, the provider's day (Beijing time); a past day" }),
  },
  { additionalProperties: false },
);
const ListQuery = Type.Object({ game_id: Type.Optional(GameId), channel: Type.Optional(Channel), limit: PageLimit }, { additionalProperties: false });
const Difference = Type.Object({
  kind: Type.Enum(['missing_payment', 'not_in_statement', 'amount_differs']),
  provider_txn_id: Type.String(),
  order_id: Type.String(),
  statement_amount: Type.Optional(Type.Integer()),
  recorded_amount: Type.Optional(Type.Integer()),
  applied: Type.Optional(Type.String({ description: 'missing_payment: applied as a late callback, `accepted` or `flagged (reason)`' })),
});
const Reconciliation = Type.Object({
  reconciliation_id: Type.String(),
  channel: Type.String(),
  game_id: Type.String(),
  date: Type.String(),
  status: Type.Enum(['matched', 'differences', 'failed']),
  counts: Type.Union([Type.Object({ statement: Type.Integer(), recorded: Type.Integer(), differences: Type.Integer() }), Type.Null()]),
  differences: Type.Array(Difference),
  error: Type.Union([Type.String(), Type.Null()], { description: 'failed: why (the statement could not be had)' }),
  actor: Type.String(),
  created_at: Type.Integer({ description: 'Unix ms' }),
});

/** Reconciliation (payments.md 6): run one (channel, game, day) and list the stored results. */
export function registerReconciliationRoutes(app: FastifyInstance, service: ReconciliationService): void {
  const admin = { auth: 'admin' as const };
  app.post('/admin/v1/reconciliations', {
    config: admin,
    schema: { tags: ['admin'], summary: "Reconcile a channel's statement of a day with the stored payments (wechat, alipay)", body: RunBody, response: responses({ 200: Reconciliation }, [401, 404, 429]) },
    handler: async (req) => {
      const b = req.body as Static<typeof RunBody>;
      return toView(await service.run(b.channel, b.game_id, b.date, actorOf(req)));
    },
  });
  app.get('/admin/v1/reconciliations', {
    config: admin,
    schema: { tags: ['admin'], summary: 'Reconciliation results, newest first', querystring: ListQuery, response: responses({ 200: Type.Object({ data: Type.Array(Reconciliation) }) }, [401, 429]) },
    handler: async (req) => {
      const q = req.query as Static<typeof ListQuery>;
      return { data: (await service.list({ ...q, limit: q.limit ?? 50 })).map(toView) };
    },
  });
}
