import type { Kysely, Transaction } from 'kysely';
import { compileNamed, runNamed, type NamedQuery } from '../db/prepared.js';
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
  const values = { notification_id: id, order_id: order.order_id, game_id: order.game_id, type, notify_url: order.notify_url, body: notificationBody(id, type, order), now };
  await runNamed(trx, insertOf(trx), values);
  return id;
}

const NAMES = ['notification_id', 'order_id', 'game_id', 'type', 'notify_url', 'body', 'now'] as const;

/** The outbox insert, compiled once per database dialect (every payment runs it; db/prepared.ts). */
const compiled = new WeakMap<object, NamedQuery<(typeof NAMES)[number]>>();

function insertOf(db: Kysely<DB>): NamedQuery<(typeof NAMES)[number]> {
  const adapter = db.getExecutor().adapter;
  let query = compiled.get(adapter);
  if (query === undefined) {
    query = compileNamed(db, NAMES, (d, p) =>
      d.insertInto('notifications').values({
        notification_id: p.notification_id,
        order_id: p.order_id,
        game_id: p.game_id,
        type: p.type,
        notify_url: p.notify_url,
        body: p.body,
        status: 'pending',
        attempts: 0,
        next_attempt_at: p.now,
        locked_until: 0,
        locked_by: null,
        last_error: null,
        created_at: p.now,
        updated_at: p.now,
        delivered_at: null,
      }),
    );
    compiled.set(adapter, query);
  }
  return query;
}
