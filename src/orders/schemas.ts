import { Type, type Static } from 'typebox';

/** The six client platforms (PROTOCOL 3). */
export const PLATFORMS = ['ios', 'android', 'windows', 'macos', 'webgl', 'harmonyos'] as const;

const str = (min: number, max: number) => Type.String({ minLength: min, maxLength: max });

/** rest-interface 2.2; every field optional. */
export const OrderMeta = Type.Object({
  zone_id: Type.Optional(str(1, 64)),
  server_id: Type.Optional(str(1, 64)),
  role_id: Type.Optional(str(1, 64)),
  role_name: Type.Optional(str(1, 64)),
  role_level: Type.Optional(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })),
});
export type OrderMeta = Static<typeof OrderMeta>;

/** rest-interface 2.1. Unknown fields are ignored (PROTOCOL 3). */
export const CreateOrderBody = Type.Object({
  reference_id: str(8, 64),
  combo_id: str(1, 64),
  product_id: str(1, 64),
  platform: Type.Enum([...PLATFORMS], { minLength: 1, maxLength: 32 }),
  notify_url: Type.String({ minLength: 14, maxLength: 255, format: 'http-url' }),
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  meta: Type.Optional(OrderMeta),
  context: Type.Optional(str(1, 255)),
});
export type CreateOrderBody = Static<typeof CreateOrderBody>;

/** rest-interface 2.3. */
export const CreateOrderResponse = Type.Object({
  order_id: str(1, 64),
  order_token: str(1, 1024),
  expires_at: Type.Integer({ description: 'Unix seconds' }),
});
export type CreateOrderResponse = Static<typeof CreateOrderResponse>;
