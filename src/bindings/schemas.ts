import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';

/** PROTOCOL 9: every binding field is 1..64 code points. */
const Field = Type.String({ minLength: 1, maxLength: 64 });

export const BindBody = Type.Object({
  partner_id: Field,
  partner_user_id: Field,
  combo_id: Field,
  role_id: Field,
});
export type BindBody = Static<typeof BindBody>;

export const BindResponse = Type.Object({ bound_at: Type.Integer({ description: 'Unix s' }) });

export const UnbindBody = Type.Object({ partner_id: Field, partner_user_id: Field });
export type UnbindBody = Static<typeof UnbindBody>;

/** rest-interface 4.4: the query string of GET /v1/query-binding. */
export const QueryBindingQuery = Type.Object({ game_id: Field, partner_user_id: Field });
export type QueryBindingQuery = Static<typeof QueryBindingQuery>;

/** rest-interface 2.6, without `extra` (never returned). */
export const Role = Type.Object({
  server_id: Type.Integer(),
  server_name: Type.String(),
  role_id: Type.String(),
  role_name: Type.String(),
  role_level: Type.Integer(),
  avatar_url: Type.String({ description: '"" when the role has no avatar' }),
  create_time: Type.Integer({ description: 'Unix s' }),
});
export type Role = Static<typeof Role>;

/** rest-interface 2.5. */
export const BindingResponse = Type.Object({ bound_at: Type.Integer({ description: 'Unix s' }), role: Role });
export type BindingResponse = Static<typeof BindingResponse>;

export const ListBindingsQuery = Type.Object({
  game_id: Type.Optional(Field),
  partner_id: Type.Optional(Field),
  partner_user_id: Type.Optional(Field),
  combo_id: Type.Optional(Field),
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
export type ListBindingsQuery = Static<typeof ListBindingsQuery>;

export const AdminBinding = Type.Object({
  game_id: Type.String(),
  partner_id: Type.String(),
  partner_user_id: Type.String(),
  combo_id: Type.String(),
  role_id: Type.String(),
  bound_at: Type.Integer({ description: 'Unix ms, like every operator API time' }),
});
export type AdminBinding = Static<typeof AdminBinding>;

export const BindingPage = Type.Object({ data: Type.Array(AdminBinding), next_cursor: Type.Union([Type.String(), Type.Null()]) });
