import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';
import { OnlineDay } from '../sessions/schemas.js';

export const PlayerParams = Type.Object({
  game_id: Type.String({ minLength: 1, maxLength: 64 }),
  combo_id: Type.String({ minLength: 1, maxLength: 64 }),
});
export type PlayerParams = Static<typeof PlayerParams>;

/** PUT body (PROTOCOL 12). Absent fields keep their stored value; null clears one. */
export const PutPlayerBody = Type.Object({
  pi: Type.Optional(
    Type.Union([Type.String({ pattern: '^[0-9A-Za-z]{38}$', description: 'The 38-character pi of the real-name check' }), Type.Null()]),
  ),
  birth_date: Type.Optional(Type.Union([Type.String({ format: 'date', description: 'YYYY-MM-DD' }), Type.Null()])),
  banned: Type.Optional(Type.Union([Type.Boolean(), Type.Null()], { description: 'null clears it (not banned), as for the other fields' })),
}, { additionalProperties: false });
export type PutPlayerBody = Static<typeof PutPlayerBody>;

export const Player = Type.Object({
  game_id: Type.String(),
  combo_id: Type.String(),
  recorded: Type.Boolean({ description: 'false: the operator has recorded nothing for this player' }),
  pi: Type.Union([Type.String(), Type.Null()]),
  birth_date: Type.Union([Type.String(), Type.Null()]),
  banned: Type.Boolean(),
  age: Type.Union([Type.Integer(), Type.Null()], { description: 'Full years on today\'s Beijing date' }),
  nppa_ct: Type.Union([Type.Literal(0), Type.Literal(2)], { description: '0: reported as authenticated (has pi), 2: as a guest' }),
  limits: Type.Union([Type.Object({ per_order: Type.Integer(), per_month: Type.Integer() }), Type.Null()], {
    description: 'Minors\' CNY limits in minor units; null: not limited',
  }),
  spending: Type.Object({
    month: Type.String({ description: 'YYYY-MM, Beijing time' }),
    currency: Type.Literal('CNY'),
    paid: Type.Integer({ description: 'Paid and delivered orders, by the Beijing month they were paid in' }),
    reserved: Type.Integer({ description: 'Unexpired orders awaiting payment' }),
    remaining: Type.Union([Type.Integer(), Type.Null()], { description: 'What a minor may still spend this month' }),
  }),
  online_seconds_today: Type.Integer(),
  online_days: Type.Array(OnlineDay, { description: 'The last 7 Beijing days, today last' }),
  created_at: Type.Union([Type.Integer(), Type.Null()]),
  updated_at: Type.Union([Type.Integer(), Type.Null()]),
});
export type Player = Static<typeof Player>;

export const NppaEventsQuery = Type.Object({
  status: Type.Optional(Type.Enum(['pending', 'uploaded', 'failed', 'skipped'])),
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
export type NppaEventsQuery = Static<typeof NppaEventsQuery>;

export const NppaEvent = Type.Object({
  event_id: Type.String(),
  session_id: Type.String(),
  combo_id: Type.String(),
  si: Type.String({ description: 'The session id sent to the national system' }),
  bt: Type.Integer({ description: '1 login (enter), 0 logout (leave)' }),
  ot: Type.Integer({ description: 'Unix ms of the behaviour as recorded' }),
  sent_ot: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds accepted by the national system (differs from ot when re-timed)' }),
  status: Type.String(),
  attempts: Type.Integer(),
  errcode: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
  next_attempt_at: Type.Integer(),
  created_at: Type.Integer(),
  uploaded_at: Type.Union([Type.Integer(), Type.Null()]),
});

export const NppaEventPage = Type.Object({
  counts: Type.Object({ pending: Type.Integer(), uploaded: Type.Integer(), failed: Type.Integer(), skipped: Type.Integer() }),
  data: Type.Array(NppaEvent),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});
export type NppaEventPage = Static<typeof NppaEventPage>;
