import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';
import { GameId } from '../games/schemas.js';

const ORDER_STATUSES = ['created', 'paid', 'delivered', 'expired', 'canceled', 'refund_pending', 'refund_failed', 'refunded'] as const;
const Ms = (description = 'Unix ms') => Type.Integer({ description });
const MsOrNull = () => Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms, null until it happens' });

export const OrderStatusEnum = Type.Enum([...ORDER_STATUSES]);

/** A filter value: PostgreSQL refuses NUL in text, so it is refused here (400, not 500). */
const Filter = (max: number) => Type.String({ minLength: 1, maxLength: max, pattern: '^[^\\u0000]*$' });

export const ListOrdersQuery = Type.Object({
  game_id: Type.Optional(GameId),
  status: Type.Optional(OrderStatusEnum),
  combo_id: Type.Optional(Filter(64)),
  reference_id: Type.Optional(Filter(64)),
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
export type ListOrdersQuery = Static<typeof ListOrdersQuery>;

/** The listing's filters, for its CSV export (every matching order: no paging). */
export const ExportOrdersQuery = Type.Omit(ListOrdersQuery, ['limit', 'cursor'], { additionalProperties: false });
export type ExportOrdersQuery = Static<typeof ExportOrdersQuery>;

/** Order ids are decimal (PROTOCOL 3). */
export const OrderParams = Type.Object({ order_id: Type.String({ pattern: '^[0-9]{1,20}$' }) });
export type OrderParams = Static<typeof OrderParams>;

/** Body of refund and cancel (POST bodies are JSON objects; send {} for none). */
export const OrderActionBody = Type.Object({
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Why; kept in the audit log and the order timeline' })),
}, { additionalProperties: false });
export type OrderActionBody = Static<typeof OrderActionBody>;

/** Body of refund: orders are refunded whole (payments.md 5); `amount`, when sent, must be the order's. */
export const RefundBody = Type.Object({
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Why; kept in the audit log and the order timeline' })),
  amount: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: "Minor units; must equal the order's amount (partial refunds are refused with 400)" })),
}, { additionalProperties: false });
export type RefundBody = Static<typeof RefundBody>;

/** An order as operators see it: everything but its token secret and request hash. */
export const AdminOrder = Type.Object({
  order_id: Type.String(),
  game_id: Type.String(),
  reference_id: Type.String(),
  combo_id: Type.String(),
  product_id: Type.String(),
  platform: Type.String(),
  notify_url: Type.String(),
  quantity: Type.Integer(),
  meta: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  context: Type.Union([Type.String(), Type.Null()]),
  amount: Type.Integer({ description: 'Minor units' }),
  currency: Type.String(),
  status: OrderStatusEnum,
  is_sandbox: Type.Boolean(),
  late_payment: Type.Boolean({ description: 'Paid after expires_at' }),
  created_at: Ms(),
  expires_at: Ms(),
  updated_at: Ms(),
  paid_at: MsOrNull(),
  delivered_at: MsOrNull(),
  expired_at: MsOrNull(),
  canceled_at: MsOrNull(),
  refunded_at: MsOrNull(),
});
export type AdminOrder = Static<typeof AdminOrder>;

export const OrderPage = Type.Object({
  data: Type.Array(AdminOrder),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
export type OrderPage = Static<typeof OrderPage>;

export const OrderEvent = Type.Object({
  from_status: Type.Union([Type.String(), Type.Null()]),
  to_status: Type.String(),
  at: Ms(),
  detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
});

export const AdminPayment = Type.Object({
  payment_id: Type.String(),
  provider: Type.String({ description: 'The payment channel (sandbox, apple, google, ...)' }),
  provider_txn_id: Type.String({ description: "The provider's transaction id (App Store transactionId, ...)" }),
  amount: Type.Integer({ description: 'Minor units credited to the order (its catalogue price for app stores)' }),
  currency: Type.String(),
  environment: Type.Union([Type.String(), Type.Null()], { description: "The store's environment (Production, Sandbox, Xcode); null for sandbox" }),
  store_amount: Type.Union([Type.Integer(), Type.Null()], { description: 'What the store charged, minor units of store_currency; null when not a store' }),
  store_currency: Type.Union([Type.String(), Type.Null()]),
  status: Type.Enum(['accepted', 'flagged']),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it was flagged (transaction_used, product_mismatch, quantity_mismatch, amount_mismatch, order_paid, ...)' }),
  late: Type.Boolean(),
  detail: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
  created_at: Ms(),
});
export type AdminPayment = Static<typeof AdminPayment>;

export const NotificationAttempt = Type.Object({
  attempt_id: Type.String(),
  at: Ms(),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
  latency_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  response_snippet: Type.Union([Type.String(), Type.Null()]),
});

export const OrderNotification = Type.Object({
  notification_id: Type.String(),
  type: Type.Enum(['ship_order', 'refund']),
  status: Type.String(),
  notify_url: Type.String(),
  attempt_count: Type.Integer(),
  next_attempt_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms; null unless pending' }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  created_at: Ms(),
  updated_at: Ms(),
  delivered_at: MsOrNull(),
  attempts: Type.Array(NotificationAttempt),
});

export const AdminOrderDetail = Type.Intersect([
  AdminOrder,
  Type.Object({
    checkout_url: Type.String({ description: 'The hosted checkout page of this order (carries its order_token)' }),
    events: Type.Array(OrderEvent),
    payments: Type.Array(AdminPayment),
    notifications: Type.Array(OrderNotification),
  }),
]);
export type AdminOrderDetail = Static<typeof AdminOrderDetail>;
