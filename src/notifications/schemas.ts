import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';
import { GameId } from '../games/schemas.js';

/**
 * A notification's status as the operator API shows it (operators.md 3). `failing` is a stored
 * `pending` one whose latest attempt failed (attempt_count > 0): it will be retried, but its
 * endpoint is not taking it. `pending` ones have not been attempted in their retry window yet.
 */
export const NOTIFICATION_STATUSES = ['pending', 'failing', 'succeeded', 'failed', 'gone'] as const;

export const NotificationStatus = Type.Enum([...NOTIFICATION_STATUSES]);
export type ShownStatus = (typeof NOTIFICATION_STATUSES)[number];

export const NotificationAttempt = Type.Object({
  attempt_id: Type.String(),
  at: Type.Integer({ description: 'Unix ms when the attempt started' }),
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status; null when no answer came' }),
  latency_ms: Type.Integer(),
  error: Type.Union([Type.String(), Type.Null()]),
  response_snippet: Type.Union([Type.String(), Type.Null()], { description: 'first 1 KiB of the answer body' }),
});
export type NotificationAttempt = Static<typeof NotificationAttempt>;

export const Notification = Type.Object({
  notification_id: Type.String(),
  order_id: Type.String(),
  game_id: Type.String(),
  notification_type: Type.Enum(['ship_order', 'refund']),
  notify_url: Type.String(),
  status: NotificationStatus,
  attempt_count: Type.Integer({ description: 'attempts in the current retry window (restarts on redeliver)' }),
  next_attempt_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms; null unless pending or failing' }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  window_started_at: Type.Integer({ description: 'Unix ms: creation or last redelivery' }),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
  delivered_at: Type.Union([Type.Integer(), Type.Null()]),
});
export type Notification = Static<typeof Notification>;

export const NotificationDetail = Type.Intersect([
  Notification,
  Type.Object({
    body: Type.String({ description: 'the exact JSON body sent to notify_url' }),
    attempts: Type.Array(NotificationAttempt, { description: 'every attempt, oldest first' }),
  }),
]);
export type NotificationDetail = Static<typeof NotificationDetail>;

export const ListNotificationsQuery = Type.Object({
  status: Type.Optional(NotificationStatus),
  game_id: Type.Optional(GameId),
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
export type ListNotificationsQuery = Static<typeof ListNotificationsQuery>;

export const NotificationPage = Type.Object({
  data: Type.Array(Notification),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'pass as cursor for the next page; null on the last' }),
});
export type NotificationPage = Static<typeof NotificationPage>;

export const NotificationParams = Type.Object({ notification_id: Type.String({ minLength: 1, maxLength: 64 }) });

export const GameParams = Type.Object({ game_id: GameId });

export const RedeliverSinceBody = Type.Object({
  since: Type.Integer({ minimum: 0, maximum: 253_402_300_799_999, description: 'Unix ms: notifications created at or after' }),
}, { additionalProperties: false });
export type RedeliverSinceBody = Static<typeof RedeliverSinceBody>;

export const RedeliverCount = Type.Object({ count: Type.Integer() });

export const RetryCount = Type.Object({ count: Type.Integer({ description: 'failing notifications made due now' }) });

/** Attempts to a notify host over a period, and how many of them succeeded. */
export const DeliveryRate = Type.Object({
  attempts: Type.Integer(),
  succeeded: Type.Integer({ description: 'attempts answered 2xx' }),
  success_rate: Type.Union([Type.Number(), Type.Null()], { description: 'succeeded / attempts, 0..1; null without attempts' }),
});

export const HostHealth = Type.Object({
  host: Type.String({ description: 'host[:port] of the notify URLs' }),
  last_hour: DeliveryRate,
  last_day: DeliveryRate,
  last_error: Type.Union([
    Type.Object({
      at: Type.Integer(),
      notification_id: Type.String(),
      status_code: Type.Union([Type.Integer(), Type.Null()]),
      error: Type.Union([Type.String(), Type.Null()]),
    }),
    Type.Null(),
  ], { description: 'the latest failed attempt of the last day' }),
  undelivered: Type.Object({ pending: Type.Integer(), failing: Type.Integer(), failed: Type.Integer() }),
  oldest_undelivered: Type.Union([
    Type.Object({ notification_id: Type.String(), status: NotificationStatus, created_at: Type.Integer() }),
    Type.Null(),
  ]),
});
export type HostHealth = Static<typeof HostHealth>;

export const DeliveryHealth = Type.Object({
  game_id: Type.String(),
  at: Type.Integer({ description: 'Unix ms the figures were read' }),
  hosts: Type.Array(HostHealth, { description: 'hosts with attempts in the last day or undelivered notifications, most failing first' }),
});
export type DeliveryHealth = Static<typeof DeliveryHealth>;
