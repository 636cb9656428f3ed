import { randomBytes } from 'node:crypto';
import { authorizationHeader } from '../src/signing/signer.js';
import { startGooglePlay, type GooglePlayStandIn } from '../test/helpers/google-play.js';
import { adminCall, orderRequestBody, requestStream, type RequestStream } from './lib.js';
import { httpPost } from './open-loop.js';

const PKG = 'com.example.bench';
const SKU = 'gems_60';

/** The Google of the google-purchase scenario (OAuth token endpoint and Play Developer API): GOOGLE_API_BASE_URL. */
export function benchGooglePlay(): Promise<GooglePlayStandIn> {
  return startGooglePlay();
}

/**
 * `count` orders of `game` bought through Play Billing (the obfuscated account id from
 * /v1/client/pay), each with its purchase set in `google`: a stream of
 * POST /v1/client/google/purchases. The first pass pays and consumes the orders; past `count`
 * the same purchases come again (replays: asked of Google again, answered from the stored
 * payment), so the figure is the service's cost of a submission, Google's answers included.
 */
export async function googlePurchases(address: string, game: string, secret: string, google: GooglePlayStandIn, count: number, notifyUrl: string): Promise<RequestStream> {
  await adminCall(address, 'PUT', `/admin/v1/games/${game}/products/gem_60`, { name: '60 gems', price: 600, currency: 'CNY', store_product_ids: { google: SKU } });
  await adminCall(address, 'PUT', `/admin/v1/games/${game}/channels/google`, { enabled: true, package_name: PKG, service_account: google.serviceAccount });
  const run = randomBytes(4).toString('hex');
  const list: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify({ ...JSON.parse(orderRequestBody(`google-${run}-${i}`, i)), notify_url: notifyUrl });
    const created = await fetch(`${address}/v1/server/create-order`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: authorizationHeader({ kind: 'game', id: game }, secret, 'POST', '/v1/server/create-order', body) },
      body,
    });
    if (created.status !== 200) throw new Error(`create-order: ${created.status} ${await created.text()}`);
    const { order_id, order_token } = (await created.json()) as { order_id: string; order_token: string };
    const paid = await fetch(`${address}/v1/client/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ order_token, channel: 'google' }) });
    if (paid.status !== 200) throw new Error(`pay google: ${paid.status} ${await paid.text()}`);
    const token = `bench.${run}.${i}`;
    const orderId = `GPA.${run}-${String(i).padStart(8, '0')}`;
    google.orderTotals.set(orderId, { currencyCode: 'USD', units: '0', nanos: 990_000_000 });
    google.setPurchase(PKG, SKU, token, { purchaseState: 0, consumptionState: 0, acknowledgementState: 0, orderId, obfuscatedExternalAccountId: order_id, productId: SKU, quantity: 1 });
    list.push(httpPost('/v1/client/google/purchases', JSON.stringify({ purchase_token: token, product_id: SKU, order_token }), { connection: 'keep-alive' }));
  }
  let next = 0;
  return requestStream(() => list[next++ % list.length]!);
}
