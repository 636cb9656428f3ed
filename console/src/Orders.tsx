import { useState, type ReactNode } from 'react';
import { ApiError, ORDER_STATUSES, api, notificationType, recentGames, type Order, type OrderDetail, type OrderNotification } from './api';
import { FilterCard, PagedTable, SelectFilter, TextFilter, useUrlFilters, usePaged, type Header } from './lists';
import { BEING_DELIVERED } from './Notifications';
import { RefundState, paidBy, refundPrompt, useSettling } from './Refunds';
import { Link } from './router';
import { useCan } from './me';
import { Card, ConfirmButton, ErrorBox, Field, Json, StatusBadge, money, time, useAction, useLoad, Unloaded } from './ui';

export const ORDER_HEADERS: Header[] = ['Order', 'Created', 'Game', 'Reference', 'Combo id', 'Product', { label: 'Amount', className: 'right' }, 'Status'];

/** One order in a table of ORDER_HEADERS columns (and `extra` cells after them). */
export function OrderRow({ o, extra }: { o: Order; extra?: ReactNode }) {
  return (
    <tr>
      <td className="mono">
        <Link to={`/orders/${encodeURIComponent(o.order_id)}`}>{o.order_id}</Link>
      </td>
      <td className="nowrap">{time(o.created_at)}</td>
      <td className="mono">{o.game_id}</td>
      <td className="mono">{o.reference_id}</td>
      <td className="mono">{o.combo_id}</td>
      <td>{o.product_id}</td>
      <td className="right">{money(o.amount, o.currency)}</td>
      <td>
        <StatusBadge status={o.status} />
        {o.is_sandbox && <span className="badge">sandbox</span>}
      </td>
      {extra}
    </tr>
  );
}

/** Filters live in the URL (?game_id=..&status=..) so a view can be shared and reloaded. */
export function OrdersPage() {
  const filters = useUrlFilters('/orders', { game_id: recentGames.current(), status: '', combo_id: '', reference_id: '' });
  const list = usePaged((cursor) => api.orders({ ...filters.applied, cursor }), [filters.key]);
  return (
    <>
      <h1>Orders</h1>
      <FilterCard filters={filters}>
        <TextFilter filters={filters} name="game_id" label="Game id" />
        <SelectFilter filters={filters} name="status" label="Status" options={ORDER_STATUSES} />
        <TextFilter filters={filters} name="combo_id" label="Combo id" />
        <TextFilter filters={filters} name="reference_id" label="Reference id" />
      </FilterCard>
      <CsvExport filter={filters.applied} />
      <PagedTable
        title="Orders (newest first)"
        list={list}
        testId="orders-table"
        headers={ORDER_HEADERS}
        empty="No orders match."
        row={(o) => <OrderRow key={o.order_id} o={o} />}
      />
    </>
  );
}

/** Downloads every order the applied filters match as CSV (GET /admin/v1/orders.csv). */
function CsvExport({ filter }: { filter: Record<string, string> }) {
  const action = useAction();
  const download = async () => {
    const file = await action.run(() => api.ordersCsv(filter));
    if (!file) return;
    const a = document.createElement('a');
    a.href = URL.createObjectURL(file.blob);
    a.download = file.filename;
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
  };
  return (
    <div className="row">
      <button onClick={download} disabled={action.busy}>
        {action.busy ? 'Exporting…' : 'Export CSV'}
      </button>
      <span className="muted small">every order these filters match</span>
      <ErrorBox error={action.error} />
    </div>
  );
}

export function OrderDetailPage({ orderId }: { orderId: string }) {
  const order = useLoad(() => api.order(orderId), [orderId]);
  useSettling(order);
  const action = useAction();
  const can = useCan();
  const [reason, setReason] = useState('');
  if (!order.data) return <Unloaded loaded={order} title={`Order ${orderId}`} back={{ to: '/orders', label: 'Back to orders' }} />;
  const o = order.data;
  const act = async (f: () => Promise<unknown>) => {
    let conflict = false;
    const done = await action.run(async () => {
      try {
        return await f();
      } catch (e) {
        conflict = e instanceof ApiError && e.status === 409;
        throw e;
      }
    });
    if (done !== undefined) setReason('');
    // A 409: the order changed meanwhile (refunded, paid, canceled elsewhere): show it as it is now.
    if (done !== undefined || conflict) order.reload();
  };
  const canRefund = (o.status === 'paid' || o.status === 'delivered' || o.status === 'refund_failed') && can('finance');
  const canCancel = o.status === 'created' && can('support');
  const paid = paidBy(o);
  const prompt = refundPrompt(o);
  return (
    <>
      <h1>
        Order <span className="mono">{o.order_id}</span> <StatusBadge status={o.status} />
      </h1>
      <Card title="Order">
        <dl className="facts" data-testid="order-facts">
          <Fact k="Game" v={<Link to={`/games/${encodeURIComponent(o.game_id)}`}>{o.game_id}</Link>} />
          <Fact k="Reference id" v={o.reference_id} />
          <Fact k="Combo id" v={o.combo_id} />
          <Fact k="Product" v={`${o.product_id}${o.quantity && o.quantity !== 1 ? ` × ${o.quantity}` : ''}`} />
          <Fact k="Amount" v={money(o.amount, o.currency)} />
          <Fact k="Platform" v={o.platform} />
          <Fact k="Sandbox" v={o.is_sandbox === undefined ? undefined : o.is_sandbox ? 'yes' : 'no'} />
          <Fact k="Paid through" v={paid ? <span data-testid="provider-trade">{paid.provider} <span className="mono">{paid.provider_txn_id}</span></span> : undefined} />
          <Fact k="Late payment" v={o.late_payment ? 'yes' : undefined} />
          <Fact k="Created" v={time(o.created_at)} />
          <Fact k="Expires" v={time(o.expires_at)} />
          <Fact k="Paid" v={o.paid_at ? time(o.paid_at) : undefined} />
          <Fact k="Delivered" v={o.delivered_at ? time(o.delivered_at) : undefined} />
          <Fact k="Refunded" v={o.refunded_at ? time(o.refunded_at) : undefined} />
          <Fact k="Canceled" v={o.canceled_at ? time(o.canceled_at) : undefined} />
          <Fact k="Notify URL" v={o.notify_url} />
          <Fact
            k="Checkout page"
            v={
              o.checkout_url && o.status === 'created' ? (
                <a href={o.checkout_url} target="_blank" rel="noreferrer">
                  open (pays this order)
                </a>
              ) : undefined
            }
          />
          <Fact k="Context" v={o.context ?? undefined} />
        </dl>
        {(canRefund || canCancel) && (
          <div className="row">
            <input name="reason" className="wide" placeholder="reason (optional, kept in the audit log)" value={reason} onChange={(e) => setReason(e.target.value)} />
            {canRefund && (
              <ConfirmButton
                label={prompt.label}
                danger
                question={prompt.question}
                disabled={action.busy}
                onConfirm={() => act(() => api.refundOrder(o.order_id, reason.trim() || undefined))}
              />
            )}
            {canCancel && (
              <ConfirmButton
                label="Cancel order"
                danger
                question="Cancel this unpaid order?"
                disabled={action.busy}
                onConfirm={() => act(() => api.cancelOrder(o.order_id, reason.trim() || undefined))}
              />
            )}
          </div>
        )}
        <RefundState order={o} />
        <ErrorBox error={action.error} />
      </Card>
      <Timeline order={o} />
      {o.payments && o.payments.length > 0 && (
        <Card title="Payments">
          <table>
            <thead>
              <tr>
                <th>Payment</th>
                <th>Channel</th>
                <th>Transaction</th>
                <th>Environment</th>
                <th className="right">Amount</th>
                <th className="right">Store price</th>
                <th>Status</th>
                <th>At</th>
              </tr>
            </thead>
            <tbody>
              {o.payments.map((p, i) => (
                <tr key={p.payment_id ?? i}>
                  <td className="mono">{p.payment_id}</td>
                  <td>{p.provider}</td>
                  <td className="mono">{p.provider_txn_id}</td>
                  <td>{p.environment ?? ''}</td>
                  <td className="right">{money(p.amount, p.currency)}</td>
                  <td className="right">{p.store_amount === null || p.store_amount === undefined ? '' : money(p.store_amount, p.store_currency ?? undefined)}</td>
                  <td>
                    {p.status}
                    {p.late ? ' (late)' : ''}
                    {p.reason ? ` (${p.reason})` : ''}
                  </td>
                  <td className="nowrap">{time(p.created_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      )}
      <Card title="Notifications">
        {(o.notifications ?? []).length === 0 && <p className="muted">No notifications.</p>}
        {(o.notifications ?? []).map((n) => (
          <NotificationBlock key={n.notification_id} n={n} onChanged={order.reload} />
        ))}
      </Card>
      <Json value={o} label="Order (raw JSON)" />
    </>
  );
}

function Fact({ k, v }: { k: string; v: ReactNode | undefined }) {
  if (v === undefined || v === null || v === '') return null;
  return (
    <>
      <dt>{k}</dt>
      <dd>{v}</dd>
    </>
  );
}

function Timeline({ order }: { order: OrderDetail }) {
  const events = order.events ?? [];
  return (
    <Card title="Timeline">
      {events.length === 0 ? (
        <p className="muted">No state changes recorded.</p>
      ) : (
        <ol className="timeline" data-testid="timeline">
          {events.map((e, i) => (
            <li key={i}>
              <span className="when">{time(e.at)}</span> {e.from_status ? <StatusBadge status={e.from_status} /> : <span className="muted">new</span>} →{' '}
              <StatusBadge status={e.to_status} />
              {e.detail !== undefined && e.detail !== null && <span className="muted small mono"> {JSON.stringify(e.detail)}</span>}
            </li>
          ))}
        </ol>
      )}
    </Card>
  );
}

export function NotificationBlock({ n, onChanged }: { n: OrderNotification; onChanged: () => void }) {
  const action = useAction();
  const redeliver = async () => {
    if ((await action.run(() => api.redeliver(n.notification_id))) !== undefined) onChanged();
  };
  const retry = async () => {
    if ((await action.run(() => api.retry(n.notification_id))) !== undefined) onChanged();
  };
  const delivering = BEING_DELIVERED.has(n.status);
  const can = useCan();
  return (
    <div className="notification" data-testid="notification">
      <div className="row spread">
        <div>
          <strong>{notificationType(n)}</strong> <span className="mono">{n.notification_id}</span> <StatusBadge status={n.status} />
          <div className="muted small">
            to {n.notify_url ?? '?'} · created {time(n.created_at)}
            {n.delivered_at ? ` · delivered ${time(n.delivered_at)}` : ''}
            {delivering && n.next_attempt_at ? ` · next attempt ${time(n.next_attempt_at)}` : ''}
          </div>
        </div>
        {!can('support') ? null : delivering ? (
          <button disabled={action.busy} onClick={retry}>
            Retry now
          </button>
        ) : (
          <ConfirmButton label="Redeliver" question="Deliver this notification again?" disabled={action.busy} onConfirm={redeliver} />
        )}
      </div>
      <ErrorBox error={action.error} />
      <table className="attempts">
        <thead>
          <tr>
            <th>Attempt at</th>
            <th>Status</th>
            <th className="right">Latency</th>
            <th>Error</th>
            <th>Response</th>
          </tr>
        </thead>
        <tbody>
          {(n.attempts ?? []).map((a, i) => (
            <tr key={a.attempt_id ?? i}>
              <td className="nowrap">{time(a.at)}</td>
              <td>{a.status_code ?? '—'}</td>
              <td className="right">{a.latency_ms} ms</td>
              <td>{a.error ?? ''}</td>
              <td className="mono small snippet">{a.response_snippet ?? ''}</td>
            </tr>
          ))}
          {(n.attempts ?? []).length === 0 && (
            <tr>
              <td colSpan={5} className="muted">
                No attempts yet.
              </td>
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}
