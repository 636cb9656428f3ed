import { Type, type Static } from 'typebox';

const OrderToken = Type.String({ minLength: 1, maxLength: 1024, description: 'The order_token of create-order: the credential of the client API' });

/** Client statuses: the order's status, with `created` past expires_at shown as `expired`. */
export const ClientOrderStatus = Type.Enum(['created', 'paid', 'delivered', 'expired', 'canceled', 'refund_pending', 'refund_failed', 'refunded']);

export const ClientOrderBody = Type.Object({ order_token: OrderToken });
export type ClientOrderBody = Static<typeof ClientOrderBody>;

export const ClientPayBody = Type.Object({
  order_token: OrderToken,
  channel: Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z0-9_]+$', description: 'Payment channel; `sandbox` confirms at once' }),
  mode: Type.Optional(Type.String({ minLength: 1, maxLength: 16, pattern: '^[a-z0-9_]+$', description: 'How to pay through the channel: wechat `native` (default), `h5`, `app`; alipay `page` (default), `wap`, `app`' })),
});
export type ClientPayBody = Static<typeof ClientPayBody>;

/** PROTOCOL 10: what a game client sees of its order. */
export const ClientOrder = Type.Object({
  order_id: Type.String(),
  product_id: Type.String(),
  product_name: Type.String(),
  quantity: Type.Integer(),
  amount: Type.Integer({ description: 'Minor units of `currency`' }),
  currency: Type.String({ description: 'ISO 4217' }),
  status: ClientOrderStatus,
  expires_at: Type.Integer({ description: 'Unix seconds' }),
});
export type ClientOrder = Static<typeof ClientOrder>;

/** payments.md 3: what the client does next to pay; none for sandbox (paid at once). */
export const PaymentAction = Type.Union([
  Type.Object({
    type: Type.Literal('storekit'),
    product_id: Type.String({ description: 'The App Store product id' }),
    quantity: Type.Integer(),
    app_account_token: Type.String({ description: "UUID: pass it as the purchase's appAccountToken" }),
  }),
  Type.Object({
    type: Type.Literal('play_billing'),
    product_id: Type.String({ description: 'The Play product id' }),
    quantity: Type.Integer(),
    obfuscated_account_id: Type.String({ description: 'Pass it as setObfuscatedAccountId' }),
  }),
  Type.Object({ type: Type.Literal('redirect'), url: Type.String({ description: 'Open it in the browser (WeChat Pay H5, Alipay page and WAP pay)' }) }),
  Type.Object({ type: Type.Literal('qr'), code_url: Type.String({ description: 'WeChat Pay Native: show it as a QR code for the player to scan' }) }),
  Type.Object({
    type: Type.Literal('wechat_app'),
    params: Type.Object({
      appid: Type.String(),
      partnerid: Type.String(),
      prepayid: Type.String(),
      package: Type.String(),
      noncestr: Type.String(),
      timestamp: Type.String(),
      sign: Type.String(),
    }, { description: "The WeChat Open SDK's PayReq, signed with the merchant key" }),
  }),
  Type.Object({ type: Type.Literal('alipay_app'), order_string: Type.String({ description: "Pass it to the Alipay SDK's payV2" }) }),
]);

export const ClientPayResponse = Type.Intersect([
  ClientOrder,
  Type.Object({ action: Type.Optional(PaymentAction) }),
]);
export type ClientPayResponse = Static<typeof ClientPayResponse>;

export const CheckoutParams = Type.Object({ order_token: Type.String() });
export type CheckoutParams = Static<typeof CheckoutParams>;
