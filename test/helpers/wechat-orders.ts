import { expect } from 'vitest';
import { createOrder, pay } from './orders.js';
import { admin, type TestGame, type TestService } from './service.js';
import type { WechatPayStandIn } from './wechatpay.js';

/** Sets the game's wechat channel to the stand-in's merchant (`WECHATPAY_BASE_URL` is the stand-in). */
export async function useWechat(t: TestService, wx: WechatPayStandIn, game: TestGame): Promise<void> {
  const r = await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/channels/wechat`, wx.settings());
  expect(r.status, r.text).toBe(200);
}

/**
 * An order of `game` paid through WeChat Pay as a player pays: a Native payment opened by
 * `POST /v1/client/pay`, paid at the stand-in, confirmed by its signed callback. The
 * stand-in must deliver callbacks to `t` (`wx.deliverTo`).
 */
export async function wechatPaidOrder(t: TestService, wx: WechatPayStandIn, game: TestGame, notifyUrl: string): Promise<{ order_id: string; transaction_id: string }> {
  const o = await createOrder(t, game, { notify_url: notifyUrl });
  const opened = await pay(t, o.order_token, 'wechat');
  expect(opened.status, opened.text).toBe(200);
  const txn = wx.pay(o.order_id);
  const cb = await wx.paymentCallback(txn);
  expect(cb.status, cb.text).toBe(204);
  return { order_id: o.order_id, transaction_id: txn.transaction_id };
}
