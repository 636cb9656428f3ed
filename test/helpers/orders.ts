import type { OrderStatus } from '../../src/db/schema.js';
import { orderBody, signed, type Answer, type TestGame, type TestService } from './service.js';

export interface CreatedOrder {
  order_id: string;
  order_token: string;
  expires_at: number;
}

/** create-order through the signed server API; throws unless it answers 200. */
export async function createOrder(t: TestService, game: TestGame, overrides: Record<string, unknown> = {}): Promise<CreatedOrder> {
  const r = await signed(t, game, 'POST', '/v1/server/create-order', orderBody(overrides));
  if (r.status !== 200) throw new Error(`create-order: ${r.status} ${r.text}`);
  return r.body as CreatedOrder;
}

/** A client purchase API call: JSON, no signature (the token in the body is the credential). */
export async function client(t: TestService, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(t.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').startsWith('application/json') && text ? JSON.parse(text) : undefined;
  return { status: res.status, headers: res.headers, body: json, text };
}

export const pay = (t: TestService, token: string, channel = 'sandbox') => client(t, '/v1/client/pay', { order_token: token, channel });

export async function orderRow(t: TestService, orderId: string) {
  return t.service.database.db.selectFrom('orders').selectAll().where('order_id', '=', orderId).executeTakeFirstOrThrow();
}

/** An order's notifications in the order they were written (ids rise within a millisecond). */
export async function notificationsOf(t: TestService, orderId: string) {
  return t.service.database.db.selectFrom('notifications').selectAll().where('order_id', '=', orderId).orderBy('created_at').orderBy('notification_id').execute();
}

export async function paymentsOf(t: TestService, orderId: string) {
  return t.service.database.db.selectFrom('payments').selectAll().where('order_id', '=', orderId).execute();
}

export async function eventsOf(t: TestService, orderId: string) {
  return t.service.database.db.selectFrom('order_events').selectAll().where('order_id', '=', orderId).orderBy('at').orderBy('event_id').execute();
}

/** Polls `check` until it returns true, or fails after `ms`. */
export async function until(check: () => Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function statusOf(t: TestService, orderId: string): Promise<OrderStatus> {
  return (await orderRow(t, orderId)).status;
}
