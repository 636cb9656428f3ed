import { randomBytes } from 'node:crypto';
import { IdGenerator } from '../../src/lib/ids.js';
import { enqueueNotification } from '../../src/notifications/outbox.js';
import type { OrderRow } from '../../src/orders/store.js';
import type { TestGame, TestService } from './service.js';

const ids = new IdGenerator();

/**
 * A paid order with its ship_order notification, written through the domain's outbox in one
 * transaction, as the payment flow does. Stand-in until the payments branch lands: tests can
 * then pay through POST /v1/client/pay instead.
 */
export async function paidOrder(
  t: TestService,
  game: TestGame,
  notifyUrl: string,
  opts: { now?: number; context?: string | null; sandbox?: boolean; refund?: boolean; lockedUntil?: number } = {},
): Promise<{ order: OrderRow; notificationId: string; refundId?: string }> {
  const now = opts.now ?? t.clock?.now() ?? Date.now();
  const order: OrderRow = {
    order_id: ids.next(now),
    game_id: game.gameId,
    reference_id: `ref-${randomBytes(8).toString('hex')}`,
    combo_id: '1234567890',
    product_id: 'gem_60',
    platform: 'ios',
    notify_url: notifyUrl,
    quantity: 2,
    meta: null,
    context: opts.context === undefined ? 'ctx-1' : opts.context,
    amount: 1200,
    currency: 'CNY',
    status: 'paid',
    token_secret: randomBytes(16).toString('hex'),
    is_sandbox: opts.sandbox === false ? 0 : 1,
    late_payment: 0,
    created_at: now,
    expires_at: now + 1_800_000,
    updated_at: now,
    paid_at: now,
    delivered_at: null,
    expired_at: null,
    canceled_at: null,
    refunded_at: null,
  };
  const out = await t.service.database.transaction(async (trx) => {
    await trx.insertInto('orders').values(order).execute();
    const notificationId = await enqueueNotification(trx, ids, order, 'ship_order', now);
    if (opts.lockedUntil !== undefined) {
      // As if a dispatcher had claimed it and then crashed.
      await trx.updateTable('notifications').set({ locked_until: opts.lockedUntil, locked_by: 'crashed' }).where('notification_id', '=', notificationId).execute();
    }
    if (!opts.refund) return { notificationId };
    // Paid and refunded before the game was told: the refund must wait for the ship_order.
    await trx.updateTable('orders').set({ status: 'refunded', refunded_at: now, updated_at: now }).where('order_id', '=', order.order_id).execute();
    const refundId = await enqueueNotification(trx, ids, order, 'refund', now);
    return { notificationId, refundId };
  });
  t.service.dispatcher.kick();
  return { order, ...out };
}

export async function notificationRow(t: TestService, notificationId: string) {
  return t.service.database.db.selectFrom('notifications').selectAll().where('notification_id', '=', notificationId).executeTakeFirstOrThrow();
}

export async function attemptRows(t: TestService, notificationId: string) {
  return t.service.database.db
    .selectFrom('notification_attempts')
    .selectAll()
    .where('notification_id', '=', notificationId)
    .orderBy('at')
    .orderBy('attempt_id')
    .execute();
}
