import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';

/** rest-interface 2.4: enter-game and leave-game share the shape. */
export const SessionReportBody = Type.Object({
  combo_id: Type.String({ minLength: 1, maxLength: 64 }),
  session_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export type SessionReportBody = Static<typeof SessionReportBody>;

/** GET /admin/v1/sessions query (PROTOCOL 11). */
export const SessionListQuery = Type.Object({
  game_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  combo_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  open: Type.Optional(Type.Boolean()),
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
export type SessionListQuery = Static<typeof SessionListQuery>;

export const SessionView = Type.Object({
  game_id: Type.String(),
  session_id: Type.String(),
  combo_id: Type.String(),
  entered_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms; null for a leave without enter' }),
  left_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms; null while open' }),
  close_reason: Type.Union([Type.Literal('leave'), Type.Literal('timeout'), Type.Null()]),
  open: Type.Boolean(),
  online_seconds: Type.Union([Type.Integer(), Type.Null()], { description: 'Duration so far; null for a leave without enter' }),
});
export type SessionView = Static<typeof SessionView>;

/** Online seconds of one Beijing (UTC+8) calendar day. */
export const OnlineDay = Type.Object({ date: Type.String({ description: 'YYYY-MM-DD, Beijing time' }), online_seconds: Type.Integer() });

export const SessionPage = Type.Object({
  data: Type.Array(SessionView),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
  online_days: Type.Optional(Type.Array(OnlineDay, { description: 'With game_id and combo_id: the last 7 Beijing days, today last' })),
});
export type SessionPage = Static<typeof SessionPage>;
