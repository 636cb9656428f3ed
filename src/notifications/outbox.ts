import type { Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import type { OrderRow } from '../orders/store.js';

export type NotificationType = 'ship_order' | 'refund';

/**
 * The notification body of PROTOCOL 5 for an order. Fixed at creation time and stored, so every
 * retry sends the same bytes (only the signature header is computed afresh per attempt).
 */
export function notificationBody(notificationId: string, type: NotificationType, order: OrderRow): string {
  const data: Record<string, unknown> = {
    order_id: order.order_id,
    reference_id: order.reference_id,
    combo_id: order.combo_id,
    product_id: order.product_id,
    quantity: order.quantity,
    currency: order.currency,
    amount: order.amount,
  };
  if (order.context !== null) data.context = order.context;
  if (type === 'ship_order') data.is_sandbox = order.is_sandbox === 1;
  return JSON.stringify({ version: '1.0', notification_id: notificationId, notification_type: type, data });
}

/**
 * Outbox write: call inside the transaction that changes the order's state, so a paid order
 * never exists without its notification, even across a crash. Returns the notification id.
 */
export async function enqueueNotification(
  trx: Transaction<DB>,
  ids: IdGenerator,
  order: OrderRow,
  type: NotificationType,
  now: number,
): Promise<string> {
  const id = prefixedId('ntf', ids);
  await trx
    .insertInto('notifications')
    .values({
      notification_id: id,
      order_id: order.order_id,
      game_id: order.game_id,
      type,
      notify_url: order.notify_url,
      body: notificationBody(id, type, order),
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      locked_until: 0,
      locked_by: null,
      last_error: null,
      created_at: now,
      updated_at: now,
      delivered_at: null,
    })
    .execute();
  return id;
}
