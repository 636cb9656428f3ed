import { Type, type Static } from 'typebox';
import { PageCursor, PageLimit } from '../http/paging.js';

export const GameId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' });
export const SecretKey = Type.String({ minLength: 20, maxLength: 256, pattern: '^sk_[\\x21-\\x7e]+$' });
/** The longest an order may stay open (order_ttl_seconds): 30 days. */
export const MAX_ORDER_TTL_SECONDS = 30 * 86_400;
const HttpUrl = Type.String({ minLength: 8, maxLength: 1024, format: 'http-url' });

export const NppaSettings = Type.Object({
  app_id: Type.String({ minLength: 1, maxLength: 64 }),
  biz_id: Type.String({ minLength: 1, maxLength: 64 }),
  secret_key: Type.String({ pattern: '^[0-9a-fA-F]{32}$' }),
}, { additionalProperties: false });

export const CreateGameBody = Type.Object({
  game_id: GameId,
  name: Type.String({ minLength: 1, maxLength: 128 }),
  iap_enabled: Type.Optional(Type.Boolean()),
  sandbox_payments: Type.Optional(Type.Boolean({ description: 'Turns the sandbox channel on (default off); the same as PUT .../channels/sandbox' })),
  order_ttl_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: MAX_ORDER_TTL_SECONDS })),
  gm_url: Type.Optional(Type.Union([HttpUrl, Type.Null()])),
  rate_limit_per_second: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  secret_key: Type.Optional(SecretKey),
}, { additionalProperties: false });
export type CreateGameBody = Static<typeof CreateGameBody>;

export const PatchGameBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  iap_enabled: Type.Optional(Type.Boolean()),
  sandbox_payments: Type.Optional(Type.Boolean()),
  order_ttl_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: MAX_ORDER_TTL_SECONDS })),
  gm_url: Type.Optional(Type.Union([HttpUrl, Type.Null()])),
  rate_limit_per_second: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  nppa: Type.Optional(Type.Union([NppaSettings, Type.Null()])),
}, { additionalProperties: false });
export type PatchGameBody = Static<typeof PatchGameBody>;

export const Game = Type.Object({
  game_id: Type.String(),
  name: Type.String(),
  iap_enabled: Type.Boolean(),
  sandbox_payments: Type.Boolean({ description: 'Whether the sandbox channel is enabled' }),
  order_ttl_seconds: Type.Integer(),
  gm_url: Type.Union([Type.String(), Type.Null()]),
  rate_limit_per_second: Type.Integer(),
  nppa: Type.Union([Type.Object({ app_id: Type.String(), biz_id: Type.String() }), Type.Null()]),
  key_ids: Type.Array(Type.String(), { description: 'Active signing keys, newest first' }),
  signing_key_id: Type.Union([Type.String(), Type.Null()], {
    description: 'The key that signs notifications and GM requests: the one the game last signed a request with, else its oldest active key',
  }),
  created_at: Type.Integer({ description: 'Unix ms' }),
  updated_at: Type.Integer({ description: 'Unix ms' }),
  gm_last_error: Type.Union([Type.String(), Type.Null()], {
    description: "The game's last failed GM request (no gm_url, unreachable, an error answer, an invalid role list), as logged; null when none failed",
  }),
  gm_last_error_at: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix ms: when gm_last_error happened (recorded again at most every 10 s)' }),
});
export type Game = Static<typeof Game>;

export const GamePage = Type.Object({ data: Type.Array(Game), next_cursor: Type.Union([Type.String(), Type.Null()]) });

export const ListGamesQuery = Type.Object({ limit: PageLimit, cursor: PageCursor }, { additionalProperties: false });
export type ListGamesQuery = Static<typeof ListGamesQuery>;

export const GameWithSecret = Type.Intersect([Game, Type.Object({ key_id: Type.String(), secret_key: Type.String() })]);

export const NewKey = Type.Object({ key_id: Type.String(), secret_key: Type.String() });

export const ProductId = Type.String({ minLength: 1, maxLength: 64 });
/** An App Store or Play product id (payments.md 2). */
const StoreProductId = Type.String({ minLength: 1, maxLength: 150, pattern: '^[A-Za-z0-9._-]+$' });
export const StoreProductIds = Type.Object({
  apple: Type.Optional(StoreProductId),
  google: Type.Optional(StoreProductId),
}, { additionalProperties: false, description: "The product's ids in the app stores: a store purchase must be of the mapped product" });
export type StoreProductIds = Static<typeof StoreProductIds>;
export const PutProductBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 128 }),
  price: Type.Integer({ minimum: 1, maximum: 1_000_000_000_000 }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', format: 'iso4217' }),
  active: Type.Optional(Type.Boolean()),
  store_product_ids: Type.Optional(StoreProductIds),
}, { additionalProperties: false });
export type PutProductBody = Static<typeof PutProductBody>;

export const Product = Type.Object({
  game_id: Type.String(),
  product_id: Type.String(),
  name: Type.String(),
  price: Type.Integer({ description: 'minor units' }),
  currency: Type.String(),
  active: Type.Boolean(),
  store_product_ids: StoreProductIds,
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export type Product = Static<typeof Product>;

export const GameParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const KeyParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }), key_id: Type.String({ minLength: 1, maxLength: 64 }) });
export const ProductParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }), product_id: ProductId });
