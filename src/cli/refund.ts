import { ADMIN_OPTIONS, AdminClient } from './client.js';
import { parse, positionals, str, UsageError, type Io } from './io.js';

type OrderAnswer = { order_id: string; status: string; events?: { to_status: string; detail?: { message?: unknown } | null }[] };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The provider's reason of the order's latest refused refund (its refund_failed event). */
function failureOf(o: OrderAnswer): string {
  const e = [...(o.events ?? [])].reverse().find((x) => x.to_status === 'refund_failed');
  return typeof e?.detail?.message === 'string' ? e.detail.message : 'no reason given';
}

function describe(o: OrderAnswer): string {
  if (o.status === 'refund_failed') return `${o.order_id} refund_failed: ${failureOf(o)} (it may be requested again)\n`;
  if (o.status === 'refund_pending') return `${o.order_id} refund_pending: waiting for the provider to return the money\n`;
  return `${o.order_id} ${o.status}\n`;
}

/**
 * POST /admin/v1/orders/:order_id/refund (payments.md 5), then, with --wait, reads the order
 * until the provider settles the refund (refunded or refund_failed) or the wait is over.
 * Exit status 1 when the refund ends refund_failed, 3 when it is still pending after --wait.
 */
export async function refund(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, reason: { type: 'string' }, wait: { type: 'string' }, interval: { type: 'string' } });
  const [orderId] = positionals(pos, ['order_id']) as [string];
  const wait = Number(str(values, 'wait') ?? '0');
  if (!Number.isFinite(wait) || wait < 0 || wait > 3600) throw new UsageError('--wait must be a number of seconds from 0 to 3600');
  const interval = Number(str(values, 'interval') ?? '1');
  if (!Number.isFinite(interval) || interval < 0.1 || interval > 60) throw new UsageError('--interval must be a number of seconds from 0.1 to 60');
  const reason = str(values, 'reason');
  const client = AdminClient.fromOptions(values, io);
  const path = `/admin/v1/orders/${encodeURIComponent(orderId)}`;
  await client.call('POST', `${path}/refund`, reason ? { reason } : {});
  const until = Date.now() + wait * 1000;
  // The order with its events: a refused refund's reason is in its refund_failed event.
  let order = (await client.call('GET', path)) as OrderAnswer;
  while (order.status === 'refund_pending' && Date.now() < until) {
    await sleep(Math.min(interval * 1000, Math.max(0, until - Date.now())));
    order = (await client.call('GET', path)) as OrderAnswer;
  }
  if (values.json === true) io.out(`${JSON.stringify(order)}\n`);
  else io.out(describe(order));
  if (order.status === 'refund_failed') return 1;
  return order.status === 'refund_pending' && wait > 0 ? 3 : 0;
}

export const REFUND_HELP = `  combo-platform orders refund <order_id> [--reason TEXT] [--wait SEC] [--interval SEC] [--json]

  refund asks for the whole order to be refunded. Sandbox orders are refunded at once; WeChat
  Pay, Alipay and Google Play orders are refund_pending until the provider returns the money,
  then refunded, or refund_failed with the provider's reason (printed; run refund again to
  retry). --wait follows the order up to SEC seconds (every --interval, default 1) until it
  settles. Exit status: 0 refunded or pending (without --wait), 1 refund_failed or an API
  error, 3 still pending after --wait.`;
