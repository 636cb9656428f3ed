import { Type, type Static } from 'typebox';

const Pem = (label: string, description: string) => Type.String({ minLength: 64, maxLength: 8192, pattern: `^-----BEGIN ${label}-----`, description });

/**
 * PUT /admin/v1/games/:game_id/channels/wechat (payments.md 2): a directly connected merchant
 * in WeChat Pay's public-key mode. The merchant's API private key and the APIv3 key are
 * secrets: sealed at rest, never returned.
 */
export const WechatSettings = Type.Object(
  {
    enabled: Type.Boolean(),
    mchid: Type.String({ minLength: 1, maxLength: 32, pattern: '^[0-9]+$', description: 'Merchant id (商户号)' }),
    appid: Type.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9_]+$', description: 'The AppID bound to the merchant (official account, website or mobile app)' }),
    merchant_serial_no: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9]+$', description: "Serial number of the merchant's API certificate" }),
    merchant_private_key: Pem('(RSA )?PRIVATE KEY', "The merchant's API private key, PEM (apiclient_key.pem); write-only"),
    api_v3_key: Type.String({ minLength: 32, maxLength: 32, description: 'The APIv3 key (32 characters) that encrypts callbacks; write-only' }),
    wechatpay_public_key_id: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_]+$', description: "WeChat Pay public key id (PUB_KEY_ID_...): answers' and callbacks' Wechatpay-Serial" }),
    wechatpay_public_key: Pem('PUBLIC KEY', 'WeChat Pay public key, PEM (pub_key.pem)'),
  },
  { additionalProperties: false },
);
export type WechatSettings = Static<typeof WechatSettings>;

export const WECHAT_SECRET_FIELDS = ['merchant_private_key', 'api_v3_key'] as const;
