import { useEffect } from 'react';
import type { OrderDetail, Payment } from './api';
import { time } from './ui';
import './payments.css';

/**
 * An order's refund through the provider that took the money (payments.md 5): `refund_pending`
 * until WeChat Pay or Alipay confirms, then `refunded` or `refund_failed` (with the provider's
 * reason; it may be requested again).
 */

/** How often an order waiting for its provider is read again. */
const SETTLE_POLL_MS = 1500;

/** Reads the order again while its refund waits for the provider, so the page shows it settle. */
export function useSettling(order: { data: OrderDetail | undefined; reload: () => void }): void {
  const pending = order.data?.status === 'refund_pending';
  const { reload } = order;
  useEffect(() => {
    if (!pending) return;
    const timer = setInterval(reload, SETTLE_POLL_MS);
    return () => clearInterval(timer);
  }, [pending, reload]);
}

/** The payment that paid the order (its channel and the provider's trade number), if any. */
export function paidBy(o: OrderDetail): Payment | undefined {
  return (o.payments ?? []).find((p) => p.status === 'accepted');
}

const PROVIDER_NAMES: Record<string, string> = { wechat: 'WeChat Pay', alipay: 'Alipay', google: 'Google Play', apple: 'the App Store' };
const providerName = (p: Payment | undefined) => PROVIDER_NAMES[p?.provider ?? ''] ?? p?.provider ?? 'the provider';

/** The provider's reason of the latest refused refund (the refund_failed event's detail). */
export function refundFailure(o: OrderDetail): { message: string; at: number } | undefined {
  const e = [...(o.events ?? [])].reverse().find((x) => x.to_status === 'refund_failed');
  if (!e) return undefined;
  const d = e.detail as { message?: unknown } | null | undefined;
  return { message: typeof d?.message === 'string' ? d.message : 'no reason given', at: e.at };
}

/** What the refund of this order is waiting for, or why it failed; nothing for other states. */
export function RefundState({ order }: { order: OrderDetail }) {
  const by = providerName(paidBy(order));
  if (order.status === 'refund_pending') {
    return (
      <p className="refund-state refund_pending" role="status" data-testid="refund-state">
        Refund requested: waiting for {by} to return the money. This page follows it.
      </p>
    );
  }
  if (order.status === 'refund_failed') {
    const f = refundFailure(order);
    return (
      <p className="refund-state refund_failed" role="status" data-testid="refund-state">
        {by} refused the refund{f ? ` (${time(f.at)})` : ''}: <strong data-testid="refund-failure">{f?.message ?? 'no reason given'}</strong>. Nothing was paid back; you may request it again.
      </p>
    );
  }
  if (order.status === 'refunded') {
    return (
      <p className="refund-state" role="status" data-testid="refund-state">
        Refunded {order.refunded_at ? time(order.refunded_at) : ''}: the money is back with the player.
      </p>
    );
  }
  return null;
}

/** The refund button's label and question for this order's channel. */
export function refundPrompt(o: OrderDetail): { label: string; question: string } {
  const p = paidBy(o);
  const label = o.status === 'refund_failed' ? 'Request refund again' : 'Refund';
  if (p?.provider === 'wechat' || p?.provider === 'alipay') {
    return { label, question: `Ask ${providerName(p)} to return the whole amount? The game gets its refund notification once the money is back.` };
  }
  return { label, question: 'Refund this order? The game gets a refund notification.' };
}
