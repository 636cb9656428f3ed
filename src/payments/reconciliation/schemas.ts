import { Type, type Static } from 'typebox';
import { GameId } from '../../games/schemas.js';
import { PageLimit } from '../../http/paging.js';

const Channel = Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9_]+$' });

/** POST /admin/v1/reconciliations body. */
export const RunReconciliationBody = Type.Object(
  {
    channel: Channel,
    game_id: GameId,
    date: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: "YYYY-MM-DD, the provider's day (Beijing time); a past day" }),
  },
  { additionalProperties: false },
);

/** GET /admin/v1/reconciliations query. */
export const ListReconciliationsQuery = Type.Object({ game_id: Type.Optional(GameId), channel: Type.Optional(Channel), limit: PageLimit }, { additionalProperties: false });

export const ReconciliationDifference = Type.Object({
  kind: Type.Enum(['missing_payment', 'not_in_statement', 'amount_differs']),
  provider_txn_id: Type.String(),
  order_id: Type.String(),
  statement_amount: Type.Optional(Type.Integer()),
  recorded_amount: Type.Optional(Type.Integer()),
  applied: Type.Optional(Type.String({ description: 'missing_payment: applied as a late callback, `accepted` or `flagged (reason)`' })),
});

/** A reconciliation run (payments.md 6): a channel's statement of one day against the payments. */
export const Reconciliation = Type.Object({
  reconciliation_id: Type.String(),
  channel: Type.String(),
  game_id: Type.String(),
  date: Type.String(),
  status: Type.Enum(['matched', 'differences', 'failed']),
  counts: Type.Union([Type.Object({ statement: Type.Integer(), recorded: Type.Integer(), differences: Type.Integer() }), Type.Null()]),
  differences: Type.Array(ReconciliationDifference),
  error: Type.Union([Type.String(), Type.Null()], { description: 'failed: why (the statement could not be had)' }),
  actor: Type.String(),
  created_at: Type.Integer({ description: 'Unix ms' }),
});
export type Reconciliation = Static<typeof Reconciliation>;

export const ReconciliationList = Type.Object({ data: Type.Array(Reconciliation) });
