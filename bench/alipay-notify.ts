import { generateKeyPairSync } from 'node:crypto';
import { makeAlipayApp, rsa2, signContent } from '../test/helpers/alipay.js';
import { adminCall, requestStream, type RequestStream } from './lib.js';
import { httpPost } from './open-loop.js';

/**
 * The `alipay-notify` scenario's requests: the bench game gets an alipay channel (keys made
 * here, Alipay's included), and one notify signed with "Alipay's" key is sent over and over.
 * Its status is WAIT_BUYER_PAY, so the service verifies, checks and answers `success` without
 * a write: the measure is the cost of a verified notify.
 */
export async function alipayNotifyStream(address: string, game: string): Promise<RequestStream> {
  const app = makeAlipayApp();
  const alipay = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await adminCall(address, 'PUT', `/admin/v1/games/${game}/channels/alipay`, {
    enabled: true,
    app_id: app.appId,
    app_private_key: app.privateKeyPem,
    alipay_public_key: alipay.publicKey.export({ type: 'spki', format: 'pem' }),
  });
  const fields: Record<string, string> = {
    notify_time: '2026-11-29 10:00:00',
    notify_type: 'trade_status_sync',
    notify_id: 'bench0000000000000000000000000001',
    charset: 'utf-8',
    version: '1.0',
    app_id: app.appId,
    auth_app_id: app.appId,
    trade_no: '2026112922001400000000000001',
    out_trade_no: 'ord_bench',
    trade_status: 'WAIT_BUYER_PAY',
    total_amount: '6.00',
    subject: 'gem_60',
    gmt_create: '2026-11-29 10:00:00',
  };
  const body = new URLSearchParams({ ...fields, sign_type: 'RSA2', sign: rsa2(signContent(fields, true), alipay.privateKey) }).toString();
  const request = httpPost(`/v1/callbacks/alipay/${game}`, body, { connection: 'keep-alive', 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' });
  return requestStream(() => request);
}
