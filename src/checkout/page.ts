import { minorUnitDigits } from '../lib/currency-digits.js';
import { CHECKOUT_SCRIPT } from './page-script.js';
import type { CheckoutView, WebChannel } from './service.js';

/**
 * The hosted checkout page (PROTOCOL 10, payments.md 3): one self-contained HTML document
 * (inline CSS and script; WeChat Pay's QR code drawn by this service and fetched from it) that
 * shows the order and pays it through /v1/client/pay with the web channels the game enabled.
 * Everything interpolated is HTML-escaped; the script reads its inputs from data attributes,
 * never from interpolated JavaScript.
 */

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(s: string | number): string {
  return String(s).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] as string);
}

/** Minor units to a display amount with the currency's own number of decimals: 600 CNY -> "CNY 6.00". */
export function formatMinorUnits(amount: number, currency: string): string {
  const digits = minorUnitDigits(currency);
  const value = (amount / 10 ** digits).toLocaleString('en', { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return `${currency} ${value}`;
}

const STATUS_TEXT: Record<string, string> = {
  created: 'Awaiting payment',
  paid: 'Paid',
  delivered: 'Paid',
  refund_pending: 'Refund pending',
  refund_failed: 'Paid',
  refunded: 'Refunded',
  expired: 'Expired',
  canceled: 'Canceled',
};

/** Headers of everything under /checkout/: the token is in the URL, so no referrer ever carries it. */
const PRIVATE_HEADERS = { 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff' };

/** Security headers for both pages. */
export function pageHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    ...PRIVATE_HEADERS,
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  };
}

/** Headers of the QR code image: an SVG that may neither run scripts nor load anything. */
export const QR_HEADERS: Record<string, string> = { 'content-type': 'image/svg+xml', ...PRIVATE_HEADERS, 'content-security-policy': "default-src 'none'" };

const STYLE = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;margin:0;color:#1d2129}
main{max-width:420px;margin:48px auto;box-sizing:border-box;background:#fff;border-radius:12px;padding:28px;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:20px;margin:0 0 20px}
dl{display:grid;grid-template-columns:auto minmax(0,1fr);gap:10px 16px;margin:0 0 24px}
dt{color:#6b7280}dd{margin:0;text-align:right;font-weight:600;overflow-wrap:anywhere}
@media (max-width:600px){main{margin:0;border-radius:0;padding:20px;box-shadow:none}}
button{display:block;width:100%;padding:14px;margin:0 0 10px;font-size:16px;border:0;border-radius:8px;background:#2563eb;color:#fff;cursor:pointer}
button.wechat{background:#07c160}button.alipay{background:#1677ff}button.sandbox{background:#6b7280}
.badge{display:inline-block;margin:0 0 16px;padding:2px 8px;border-radius:4px;background:#fef3c7;color:#92400e;font-size:13px;font-weight:600}
#qr-box{text-align:center;margin:8px 0}#qr{width:240px;height:240px;max-width:100%}
button:disabled{background:#9ca3af;cursor:default}
.status{margin-top:16px;text-align:center;font-weight:600}
.paid{color:#15803d}.error{color:#b91c1c}.muted{color:#6b7280;font-size:13px;text-align:center;margin-top:12px}`;

function layout(title: string, nonce: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

const CHANNEL_LABELS: Record<Exclude<WebChannel, 'sandbox'>, string> = { wechat: 'WeChat Pay', alipay: 'Alipay' };

/** One button per channel; sandbox marked as a test payment (payments.md 1). */
function channelButtons(view: CheckoutView): string {
  const amount = escapeHtml(formatMinorUnits(view.order.amount, view.order.currency));
  return view.channels
    .map((c) =>
      c === 'sandbox'
        ? `<button id="pay" class="pay sandbox" type="button" data-channel="sandbox">Test payment: ${amount}</button>
<p class="muted" id="note">Test payment (sandbox): no money moves.</p>`
        : `<button id="pay-${c}" class="pay ${c}" type="button" data-channel="${c}">${CHANNEL_LABELS[c]}</button>`,
    )
    .join('\n');
}

export function renderCheckoutPage(view: CheckoutView, token: string, nonce: string): string {
  const o = view.order;
  const paid = o.status === 'paid' || o.status === 'delivered';
  const open = o.status === 'created';
  const action = !open ? '' : view.channels.length > 0 ? channelButtons(view) : '<p class="muted">No payment channel is available for this game.</p>';
  const onlyTest = open && view.channels.length === 1 && view.channels[0] === 'sandbox';
  // Relative to /checkout/<token>: the page works behind a path prefix too.
  const data = `data-token="${escapeHtml(token)}" data-pay-url="../v1/client/pay" data-order-url="../v1/client/order" data-qr-url="${escapeHtml(encodeURIComponent(token))}/wechat-qr.svg"`;
  return layout(
    'Checkout',
    nonce,
    `<div id="checkout" ${data}>
<h1>Checkout</h1>
${onlyTest ? '<p class="badge" id="test-badge">TEST PAYMENT</p>' : ''}
<dl>
<dt>Product</dt><dd id="product">${escapeHtml(o.product_name)}</dd>
<dt>Quantity</dt><dd id="quantity">${escapeHtml(o.quantity)}</dd>
<dt>Amount</dt><dd id="amount">${escapeHtml(formatMinorUnits(o.amount, o.currency))}</dd>
<dt>Order</dt><dd id="order-id">${escapeHtml(o.order_id)}</dd>
</dl>
${action}
${open && view.channels.includes('wechat') ? '<div id="qr-box" hidden></div>' : ''}
<div id="status" class="status${paid ? ' paid' : ''}" data-status="${escapeHtml(o.status)}" role="status">${escapeHtml(STATUS_TEXT[o.status] ?? o.status)}</div>
</div>
<script nonce="${nonce}">${CHECKOUT_SCRIPT}</script>`,
  );
}

export function renderErrorPage(title: string, message: string, nonce: string): string {
  return layout(title, nonce, `<h1>${escapeHtml(title)}</h1><p class="error" id="error">${escapeHtml(message)}</p>`);
}
