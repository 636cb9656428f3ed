import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';
import { GameId, SecretKey } from '../games/schemas.js';

/** Same alphabet as game ids: it travels in the Authorization header (`Partner=<id>`). */
export const PartnerId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
const GameList = Type.Array(GameId, { maxItems: 1000, uniqueItems: true });
const RateLimit = Type.Integer({ minimum: 1, maximum: 1_000_000 });

export const CreatePartnerBody = Type.Object({
  partner_id: PartnerId,
  name: Type.String({ minLength: 1, maxLength: 128 }),
  enabled: Type.Optional(Type.Boolean()),
  games: GameList,
  rate_limit_per_second: Type.Optional(RateLimit),
  secret_key: Type.Optional(SecretKey),
}, { additionalProperties: false });
export type CreatePartnerBody = Static<typeof CreatePartnerBody>;

export const PatchPartnerBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  enabled: Type.Optional(Type.Boolean()),
  games: Type.Optional(GameList),
  rate_limit_per_second: Type.Optional(RateLimit),
}, { additionalProperties: false });
export type PatchPartnerBody = Static<typeof PatchPartnerBody>;

export const Partner = Type.Object({
  partner_id: Type.String(),
  name: Type.String(),
  enabled: Type.Boolean(),
  games: Type.Array(Type.String()),
  rate_limit_per_second: Type.Integer(),
  key_ids: Type.Array(Type.String()),
  created_at: Type.Integer({ description: 'Unix ms' }),
  updated_at: Type.Integer({ description: 'Unix ms' }),
});
export type Partner = Static<typeof Partner>;

export const PartnerWithSecret = Type.Intersect([Partner, Type.Object({ key_id: Type.String(), secret_key: Type.String() })]);

export const PartnerPage = Type.Object({ data: Type.Array(Partner), next_cursor: Type.Union([Type.String(), Type.Null()]) });

export const ListPartnersQuery = Type.Object({
  limit: PageLimit,
  cursor: PageCursor,
}, { additionalProperties: false });
export type ListPartnersQuery = Static<typeof ListPartnersQuery>;

export const PartnerParams = Type.Object({ partner_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const PartnerKeyParams = Type.Object({
  partner_id: Type.String({ minLength: 1, maxLength: 64 }),
  key_id: Type.String({ minLength: 1, maxLength: 64 }),
});
