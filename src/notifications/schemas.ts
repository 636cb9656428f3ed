import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';
import { GameId } from '../games/schemas.js';

export const NOTIFICATION_STATUSES = ['pending', 'succeeded', 'failed', 'gone'] as const;

export const NotificationStatus = Type.Enum([...NOTIFICATION_STATUSES]);

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
  next_attempt_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms; null unless pending' }),
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
