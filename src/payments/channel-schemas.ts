import { Type, type Static } from 'typebox';

export const ChannelName = Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9_]+$' });
export const ChannelParams = Type.Object({ game_id: Type.String({ minLength: 1, maxLength: 64 }), channel: ChannelName });
export type ChannelParams = Static<typeof ChannelParams>;

/**
 * A game's channel as the admin API shows it (payments.md 2): the settings as PUT, secrets
 * as `"***"`, and the address to paste into the provider's console.
 */
export const ChannelView = Type.Object(
  {
    game_id: Type.String(),
    channel: Type.String(),
    enabled: Type.Boolean(),
    callback_url: Type.Union([Type.String(), Type.Null()], { description: "Provider callbacks (PUBLIC_BASE_URL/v1/callbacks/:channel/:game_id): paste it into the provider's console; null for sandbox" }),
    created_at: Type.Integer({ description: 'Unix ms' }),
    updated_at: Type.Integer({ description: 'Unix ms' }),
  },
  { additionalProperties: true, description: 'Plus the settings of the channel as PUT; secrets show as "***"' },
);
export type ChannelView = Static<typeof ChannelView> & Record<string, unknown>;

export const ChannelList = Type.Object({ data: Type.Array(ChannelView) });
