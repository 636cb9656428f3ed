import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';
import { AdminPayment } from '../orders/admin-schemas.js';

/** GET /admin/v1/payments query. */
export const ListPaymentsQuery = Type.Object(
  {
    status: Type.Optional(Type.Enum(['accepted', 'flagged'], { description: '`flagged`: payments kept for the operator to settle (usually a refund)' })),
    game_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    provider: Type.Optional(Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9_]+$' })),
    order_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    limit: PageLimit,
    cursor: PageCursor,
  },
  { additionalProperties: false },
);
export type ListPaymentsQuery = Static<typeof ListPaymentsQuery>;

/** A payment in the payments listing: as in its order, with the order and its game. */
export const ListedPayment = Type.Intersect([AdminPayment, Type.Object({ order_id: Type.String(), game_id: Type.Union([Type.String(), Type.Null()]) })]);

export const PaymentPage = Type.Object({
  data: Type.Array(ListedPayment),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
