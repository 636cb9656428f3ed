import { Type, type Static } from 'typebox';

/**
 * PUT /admin/v1/games/:game_id/channels/alipay (payments.md 2). `app_private_key` signs our
 * requests (a secret: sealed at rest, never returned); `alipay_public_key` verifies Alipay's
 * answers and notifies. Both PEM, RSA (RSA2: SHA256withRSA), checked when the channel is enabled.
 */
export const AlipaySettings = Type.Object(
  {
    enabled: Type.Boolean(),
    app_id: Type.String({ minLength: 1, maxLength: 32, pattern: '^[0-9]+$', description: "The application's APPID on Alipay's open platform (open.alipay.com)" }),
    app_private_key: Type.String({
      minLength: 64,
      maxLength: 8192,
      pattern: '^-----BEGIN (RSA )?PRIVATE KEY-----',
      description: "The application's private key, PEM (PKCS#8 or PKCS#1), RSA of at least 2048 bits; write-only",
    }),
    alipay_public_key: Type.String({
      minLength: 64,
      maxLength: 8192,
      pattern: '^-----BEGIN PUBLIC KEY-----',
      description: "Alipay's public key (支付宝公钥) of the application, PEM",
    }),
  },
  { additionalProperties: false },
);
export type AlipaySettings = Static<typeof AlipaySettings>;

export const ALIPAY_SECRET_FIELDS = ['app_private_key'] as const;
