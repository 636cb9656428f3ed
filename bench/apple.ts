import { randomBytes } from 'node:crypto';
import { authorizationHeader } from '../src/signing/signer.js';
import { makeAppleChain, transaction, type AppleChain } from '../test/helpers/apple.js';
import { adminCall, orderRequestBody, requestStream, type RequestStream } from './lib.js';
import { httpPost } from './open-loop.js';

const BUNDLE = 'com.example.bench';
const STORE_ID = 'com.example.bench.gems60';

/** The App Store of the apple-transaction scenario: its root goes into APPLE_ROOT_CERTS. */
export function benchAppleChain(): AppleChain {
  return makeAppleChain('bench');
}

/**
 * `count` orders of `game` bought through StoreKit (their appAccountTokens asked from
 * /v1/client/pay), each with its Production transaction signed by `chain`: a stream of
 * POST /v1/client/apple/transactions. The first pass pays the orders; past `count` the same
 * transactions come again (replays: verified the same way, then answered from the stored
 * payment), so the figure is the cost of a verified transaction.
 */
export async function appleTransactions(address: string, game: string, secret: string, chain: AppleChain, count: number, notifyUrl: string): Promise<RequestStream> {
  await adminCall(address, 'PUT', `/admin/v1/games/${game}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY', store_product_ids: { apple: STORE_ID } });
  await adminCall(address, 'PUT', `/admin/v1/games/${game}/channels/apple`, { enabled: true, bundle_id: BUNDLE, app_apple_id: 1234567890 });
  const run = randomBytes(4).toString('hex');
  const list: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify({ ...JSON.parse(orderRequestBody(`apple-${run}-${i}`, i)), notify_url: notifyUrl });
    const created = await fetch(`${address}/v1/server/create-order`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: authorizationHeader({ kind: 'game', id: game }, secret, 'POST', '/v1/server/create-order', body) },
      body,
    });
    if (created.status !== 200) throw new Error(`create-order: ${created.status} ${await created.text()}`);
    const { order_token } = (await created.json()) as { order_token: string };
    const paid = await fetch(`${address}/v1/client/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order_token, channel: 'apple' }) });
    if (paid.status !== 200) throw new Error(`pay apple: ${paid.status} ${await paid.text()}`);
    const token = ((await paid.json()) as { action: { app_account_token: string } }).action.app_account_token;
    const jws = chain.sign(transaction({ bundleId: BUNDLE, productId: STORE_ID, appAccountToken: token, environment: 'Production', transactionId: `${run}${String(i).padStart(8, '0')}` }));
    list.push(httpPost('/v1/client/apple/transactions', JSON.stringify({ signed_transaction: jws }), { connection: 'keep-alive' }));
  }
  let next = 0;
  return requestStream(() => list[next++ % list.length]!);
}
