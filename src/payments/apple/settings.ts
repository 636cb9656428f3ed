import { Type, type Static } from 'typebox';

/** PUT /admin/v1/games/:game_id/channels/apple (payments.md 2). No secrets: Apple signs, we verify. */
export const AppleSettings = Type.Object(
  {
    enabled: Type.Boolean(),
    bundle_id: Type.String({ minLength: 1, maxLength: 155, pattern: '^[A-Za-z0-9.-]+$', description: "The app's bundle identifier (CFBundleIdentifier)" }),
    app_apple_id: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999_999, description: "The app's Apple ID in App Store Connect; required to accept Production transactions" })),
    accept_sandbox: Type.Optional(Type.Boolean({ default: true, description: 'Accept Sandbox and Xcode transactions (paid orders are sandbox; App Review buys in the sandbox)' })),
  },
  { additionalProperties: false },
);
export type AppleSettings = Static<typeof AppleSettings>;
