// @ts-check
/**
 * Checkout client for web and H5 games (payments.md 3): pays an order with its order_token
 * through the service's client API, opens the hosted checkout page, follows the order until it
 * is settled. An ES module with no imports: served by the service at /sdk/v1/checkout.js and
 * exported by the package as `combo-game-platform/checkout-client`. Types: checkout.d.ts (this
 * file is checked against them: client/tsconfig.json, part of `npm run typecheck`).
 */

const SERVED_PATH = '/sdk/v1/checkout.js';

/** An answer of the client API that is not 200 (its ErrorResponse), or no answer at all. */
export class CheckoutError extends Error {
  /**
   * @param {number} status HTTP status; 0 when the service could not be reached
   * @param {string} error the ErrorResponse's `error` (`network_error` when unreachable)
   * @param {string} message
   */
  constructor(status, error, message) {
    super(message);
    this.name = 'CheckoutError';
    this.status = status;
    this.error = error;
  }
}

/** The service this module was loaded from (its /sdk/v1/checkout.js), else undefined. */
function servedFrom() {
  const here = new URL(import.meta.url);
  if (!here.pathname.endsWith(SERVED_PATH)) return undefined;
  return `${here.origin}${here.pathname.slice(0, -SERVED_PATH.length)}`;
}

/** Statuses that may still change by a payment: waitForPayment goes on polling. */
const OPEN_STATUSES = new Set(['created']);

/** @param {number} ms @param {AbortSignal | undefined} signal */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve(undefined);
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/**
 * A client of one service.
 * @param {import('./checkout.js').CheckoutClientOptions} [options]
 * @returns {import('./checkout.js').CheckoutClient}
 */
export function createCheckoutClient(options = {}) {
  const base = (options.baseUrl ?? servedFrom())?.replace(/\/+$/, '');
  if (!base) throw new TypeError('baseUrl is required: the address of the game platform service (e.g. https://pay.example.com)');
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);

  /** @param {string} path @param {object} body */
  async function post(path, body) {
    let res;
    try {
      res = await doFetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    } catch (e) {
      throw new CheckoutError(0, 'network_error', `the service could not be reached: ${e instanceof Error ? e.message : String(e)}`);
    }
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) throw new CheckoutError(res.status, answer.error ?? 'http_error', answer.message ?? `HTTP ${res.status}`);
    return answer;
  }

  const checkoutUrl = (/** @type {string} */ orderToken) => `${base}/checkout/${encodeURIComponent(orderToken)}`;
  const getOrder = (/** @type {string} */ orderToken) => post('/v1/client/order', { order_token: orderToken });

  return {
    baseUrl: base,
    checkoutUrl,
    qrCodeUrl: (orderToken) => `${checkoutUrl(orderToken)}/wechat-qr.svg`,
    getOrder,
    pay: (orderToken, channel, payOptions = {}) => post('/v1/client/pay', { order_token: orderToken, channel, ...(payOptions.mode ? { mode: payOptions.mode } : {}) }),
    openCheckout(orderToken, openOptions = {}) {
      const url = checkoutUrl(orderToken);
      const target = openOptions.target ?? '_blank';
      if (target === '_self') {
        window.location.assign(url);
        return null;
      }
      return window.open(url, target);
    },
    async waitForPayment(orderToken, waitOptions = {}) {
      const interval = waitOptions.intervalMs ?? 2000;
      for (;;) {
        waitOptions.signal?.throwIfAborted();
        const order = await getOrder(orderToken);
        waitOptions.onStatus?.(order);
        if (!OPEN_STATUSES.has(order.status)) return order;
        await sleep(interval, waitOptions.signal);
      }
    },
  };
}

/** @type {import('./checkout.js').CheckoutClient | undefined} */
let served;
/** The client of the service this module was loaded from (the functions below). */
function defaultClient() {
  served ??= createCheckoutClient();
  return served;
}

/** @type {import('./checkout.js').openCheckout} */
export const openCheckout = (orderToken, options) => defaultClient().openCheckout(orderToken, options);
/** @type {import('./checkout.js').pay} */
export const pay = (orderToken, channel, options) => defaultClient().pay(orderToken, channel, options);
/** @type {import('./checkout.js').checkoutUrl} */
export const checkoutUrl = (orderToken) => defaultClient().checkoutUrl(orderToken);
/** @type {import('./checkout.js').qrCodeUrl} */
export const qrCodeUrl = (orderToken) => defaultClient().qrCodeUrl(orderToken);
/** @type {import('./checkout.js').getOrder} */
export const getOrder = (orderToken) => defaultClient().getOrder(orderToken);
/** @type {import('./checkout.js').waitForPayment} */
export const waitForPayment = (orderToken, options) => defaultClient().waitForPayment(orderToken, options);
