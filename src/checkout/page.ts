import { minorUnitDigits } from '../lib/currency-digits.js';
import type { CheckoutView } from './service.js';

/**
 * The hosted checkout page (PROTOCOL 10): one self-contained HTML document (inline CSS and
 * script, nothing fetched from elsewhere) that shows the order and pays it through
 * /v1/client/pay. Everything interpolated is HTML-escaped; the script reads its inputs from
 * data attributes, never from interpolated JavaScript.
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
  refunded: 'Refunded',
  expired: 'Expired',
  canceled: 'Canceled',
};

/** Security headers for both pages: the token is in the URL, so no referrer ever carries it. */
export function pageHeaders(nonce: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'content-security-policy': `default-src 'none'; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  };
}

const STYLE = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;margin:0;color:#1d2129}
main{max-width:420px;margin:48px auto;background:#fff;border-radius:12px;padding:28px;box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:20px;margin:0 0 20px}
dl{display:grid;grid-template-columns:auto minmax(0,1fr);gap:10px 16px;margin:0 0 24px}
dt{color:#6b7280}dd{margin:0;text-align:right;font-weight:600;overflow-wrap:anywhere}
button{width:100%;padding:14px;font-size:16px;border:0;border-radius:8px;background:#2563eb;color:#fff;cursor:pointer}
button:disabled{background:#9ca3af;cursor:default}
.status{margin-top:16px;text-align:center;font-weight:600}
.paid{color:#15803d}.error{color:#b91c1c}.muted{color:#6b7280;font-size:13px;text-align:center;margin-top:12px}`;

/** The client side: POST /v1/client/pay, then show the answer's status or error message. */
const SCRIPT = `
(function(){
  var btn=document.getElementById('pay'); if(!btn) return;
  var out=document.getElementById('status');
  var labels={paid:'Paid',delivered:'Paid',refunded:'Refunded',expired:'Expired',canceled:'Canceled',created:'Awaiting payment'};
  btn.addEventListener('click',function(){
    btn.disabled=true; out.className='status'; out.textContent='Paying…';
    fetch(btn.getAttribute('data-pay-url'),{method:'POST',headers:{'content-type':'application/json'},
      body:JSON.stringify({order_token:btn.getAttribute('data-token'),channel:btn.getAttribute('data-channel')})})
    .then(function(r){return r.json().then(function(b){return {ok:r.ok,status:r.status,body:b};});})
    .then(function(res){
      if(res.ok){
        var st=res.body.status; out.setAttribute('data-status',st); out.textContent=labels[st]||st;
        out.className='status'+(st==='paid'||st==='delivered'?' paid':'');
        if(st!=='created'){ btn.remove(); var n=document.getElementById('note'); if(n) n.remove(); } else btn.disabled=false;
      } else {
        out.className='status error'; out.textContent=res.body.message||'Payment failed';
        // Expired or canceled meanwhile (409), no channel (403), token refused (401): trying again cannot help.
        if(res.status===409||res.status===403||res.status===401) btn.remove(); else btn.disabled=false;
      }
    })
    .catch(function(){ out.className='status error'; out.textContent='Network error, try again'; btn.disabled=false; });
  });
})();`;

function layout(title: string, nonce: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${escapeHtml(title)}</title>
<style nonce="${nonce}">${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

export function renderCheckoutPage(view: CheckoutView, token: string, nonce: string): string {
  const o = view.order;
  const paid = o.status === 'paid' || o.status === 'delivered';
  const canPay = o.status === 'created' && view.sandboxAvailable;
  const action = canPay
    ? `<button id="pay" type="button" data-token="${escapeHtml(token)}" data-channel="sandbox" data-pay-url="../v1/client/pay">Test payment: ${escapeHtml(formatMinorUnits(o.amount, o.currency))}</button>
<p class="muted" id="note">Test payment (sandbox): no money moves.</p>`
    : o.status === 'created'
      ? '<p class="muted">No payment channel is available for this game.</p>'
      : '';
  return layout(
    'Checkout',
    nonce,
    `<h1>Checkout</h1>
<dl>
<dt>Product</dt><dd id="product">${escapeHtml(o.product_name)}</dd>
<dt>Quantity</dt><dd id="quantity">${escapeHtml(o.quantity)}</dd>
<dt>Amount</dt><dd id="amount">${escapeHtml(formatMinorUnits(o.amount, o.currency))}</dd>
<dt>Order</dt><dd id="order-id">${escapeHtml(o.order_id)}</dd>
</dl>
${action}
<div id="status" class="status${paid ? ' paid' : ''}" data-status="${escapeHtml(o.status)}" role="status">${escapeHtml(STATUS_TEXT[o.status] ?? o.status)}</div>
<script nonce="${nonce}">${SCRIPT}</script>`,
  );
}

export function renderErrorPage(title: string, message: string, nonce: string): string {
  return layout(title, nonce, `<h1>${escapeHtml(title)}</h1><p class="error" id="error">${escapeHtml(message)}</p>`);
}
