import { Type, type Static } from 'typebox';

/**
 * PUT /admin/v1/games/:game_id/channels/google (payments.md 2). The service account's private
 * key is a secret: sealed at rest, never returned.
 */
export const GoogleSettings = Type.Object(
  {
    enabled: Type.Boolean(),
    package_name: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z][A-Za-z0-9_]*(\\.[A-Za-z][A-Za-z0-9_]*)+$', description: "The app's package name" }),
    service_account: Type.Object(
      {
        client_email: Type.String({ minLength: 3, maxLength: 254, pattern: '^[^@\\s]+@[^@\\s]+$' }),
        private_key: Type.String({ minLength: 64, maxLength: 8192, pattern: '^-----BEGIN PRIVATE KEY-----', description: 'PEM (PKCS#8), as in the key file of the service account; write-only' }),
        token_uri: Type.Optional(Type.String({ minLength: 8, maxLength: 1024, format: 'http-url' })),
      },
      { additionalProperties: false },
    ),
    accept_sandbox: Type.Optional(Type.Boolean({ default: true, description: 'Accept test purchases (purchaseType 0)' })),
    push_audience: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: "The audience of the Pub/Sub push subscription's OIDC token" })),
  },
  { additionalProperties: false },
);
export type GoogleSettings = Static<typeof GoogleSettings>;

export const GOOGLE_SECRET_FIELDS = ['service_account.private_key'] as const;
