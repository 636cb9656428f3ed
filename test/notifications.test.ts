import dns from 'node:dns/promises';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver, ok, status, until } from './helpers/receiver.js';
import { attemptRows, notificationRow, paidOrder } from './helpers/paid-orders.js';
import pino from 'pino';
import { IdGenerator } from '../src/lib/ids.js';
import { OutboundClient, isPrivateAddress } from '../src/lib/outbound.js';
import { NotificationDispatcher } from '../src/notifications/dispatcher.js';
import { NotificationService } from '../src/notifications/service.js';
import { NotificationStore } from '../src/notifications/store.js';
import { sql } from 'kysely';
import { TEST_DB } from './helpers/db.js';
import { admin, createGame, startService, type Answer, type TestGame, type TestService } from './helpers/service.js';

const RETRY_BASE_MS = 40;
const keys = new Map<string, string[]>();
let receiver: Receiver;
let t: TestService;

beforeAll(async () => {
  receiver = await new Receiver({ keys, now: () => Date.now() }).start();
  t = await startService({
    env: { NOTIFY_TIMEOUT_MS: '1500', NOTIFY_RETRY_BASE_MS: String(RETRY_BASE_MS), NOTIFY_POLL_INTERVAL_MS: '50' },
  });
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
});

let paths = 0;
/** A fresh notify path per test, so scripts and receipts do not mix. */
const newPath = () => `/notify/${++paths}`;

async function game(): Promise<TestGame> {
  const g = await createGame(t);
  keys.set(g.gameId, [g.secret]);
  return g;
}

const settled = (id: string) =>
  until(`notification ${id} to settle`, async () => {
    const r = await notificationRow(t, id);
    return r.status !== 'pending' ? r : null;
  });

describe('delivery', () => {
  it('POSTs the signed notification, and the order becomes delivered', async () => {
    const g = await game();
    const path = newPath();
    const { order, notificationId } = await paidOrder(t, g, `${receiver.url}${path}?b=2&a=x%20y`);
    const row = await settled(notificationId);
    expect(row.status).toBe('succeeded');
    expect(row.delivered_at).toBeGreaterThan(0);

    const got = receiver.on(path);
    expect(got).toHaveLength(1);
    const rec = got[0]!;
    expect(rec.signatureProblem).toBeNull();
    expect(rec.url).toBe(`${path}?b=2&a=x%20y`);
    expect(rec.headers['content-type']).toBe('application/json');
    expect(rec.headers.authorization).toMatch(new RegExp(`^SEAYOO-HMAC-SHA256 Game=${g.gameId},Timestamp=\\d{8}T\\d{6}Z,Signature=[0-9a-f]{64}$`));
    expect(rec.body).toEqual({
      version: '1.0',
      notification_id: notificationId,
      notification_type: 'ship_order',
      data: {
        order_id: order.order_id,
        reference_id: order.reference_id,
        combo_id: order.combo_id,
        product_id: 'gem_60',
        quantity: 2,
        currency: 'CNY',
        amount: 1200,
        context: 'ctx-1',
        is_sandbox: true,
      },
    });

    const db = t.service.database.db;
    const o = await db.selectFrom('orders').selectAll().where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('delivered');
    expect(o.delivered_at).toBe(row.delivered_at);
    const events = await db.selectFrom('order_events').selectAll().where('order_id', '=', order.order_id).execute();
    expect(events.map((e) => [e.from_status, e.to_status])).toEqual([['paid', 'delivered']]);

    const attempts = await attemptRows(t, notificationId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ status_code: 200, error: null, response_snippet: '{"ok":true}' });
    expect(attempts[0]!.latency_ms).toBeGreaterThanOrEqual(0);
  });

  it('sends | and ^ in the notify_url path escaped, as the Go SDK rebuilds the URI it verifies', async () => {
    // Go's net/url re-escapes | and ^ in RequestURI(); Node's URL keeps %7C as received. Sent
    // escaped and signed so, both SDKs verify the same URI.
    const g = await game();
    const path = newPath();
    // A valid escape (%41) is taken and sent as written; a % that starts none is refused (400).
    const { notificationId } = await paidOrder(t, g, `${receiver.url}${path}/a|b^c%41?q=|`);
    expect((await settled(notificationId)).status).toBe('succeeded');
    const rec = receiver.on(`${path}/a%7Cb%5Ec%41`)[0]!;
    expect(rec.url).toBe(`${path}/a%7Cb%5Ec%41?q=|`);
    expect(rec.signatureProblem).toBeNull();
  });

  it('omits context when the order had none', async () => {
    const g = await game();
    const path = newPath();
    const { notificationId } = await paidOrder(t, g, receiver.url + path, { context: null, sandbox: false });
    expect((await settled(notificationId)).status).toBe('succeeded');
    const data = receiver.on(path)[0]!.body.data;
    expect('context' in data).toBe(false);
    expect(data.is_sandbox).toBe(false);
  });

  it('signs with the old key after a rotation until the game signs a request with the new one', async () => {
    const g = await game();
    const k = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`, {});
    expect(k.status).toBe(201);
    // The receiver knows only the old key (test/signing-keys.test.ts follows the switch).
    const path = newPath();
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    expect((await settled(notificationId)).status).toBe('succeeded');
    expect(receiver.on(path).map((r) => r.signatureProblem)).toEqual([null]);
  });

  it('retries after 500, time-out, connection reset, 503; then succeeds, each attempt signed afresh', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, status(500), { kind: 'hang' }, { kind: 'reset' }, status(503), ok());
    const { order, notificationId } = await paidOrder(t, g, receiver.url + path);
    const row = await settled(notificationId);
    expect(row.status).toBe('succeeded');
    expect(row.attempts).toBe(5);

    const got = receiver.on(path);
    expect(got).toHaveLength(5);
    expect(got.every((r) => r.signatureProblem === null && r.body.notification_id === notificationId)).toBe(true);
    expect(new Set(got.map((r) => r.raw)).size).toBe(1); // same body bytes every time

    const attempts = await attemptRows(t, notificationId);
    expect(attempts.map((a) => a.status_code)).toEqual([500, null, null, 503, 200]);
    expect(attempts[0]!.error).toBe('HTTP 500');
    expect(attempts[1]!.error).toBe('timed out after 1500 ms');
    expect(attempts[2]!.error).toMatch(/closed|reset|socket/i);
    expect(attempts[3]!.error).toBe('HTTP 503');
    expect(attempts[4]!.error).toBeNull();
    // Each retry waited at least the schedule's minimum (half the nominal delay).
    for (let i = 1; i < attempts.length; i++) {
      expect(attempts[i]!.at - attempts[i - 1]!.at).toBeGreaterThanOrEqual((RETRY_BASE_MS * 3 ** (i - 1)) / 2);
    }
    const o = await t.service.database.db.selectFrom('orders').select('status').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('delivered');
  });

  it('stops at once on 410 (gone); the order stays paid', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, status(410, '{"error":"gone"}'));
    const { order, notificationId } = await paidOrder(t, g, receiver.url + path);
    const row = await settled(notificationId);
    expect(row).toMatchObject({ status: 'gone', attempts: 1, last_error: 'HTTP 410', locked_by: null });
    expect(receiver.on(path)).toHaveLength(1);
    const o = await t.service.database.db.selectFrom('orders').select('status').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('paid');
  });

  it('does not follow a redirect: a 302 is a failed attempt', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, { kind: 'redirect', location: `${receiver.url}/elsewhere` }, ok());
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    expect((await settled(notificationId)).status).toBe('succeeded');
    const attempts = await attemptRows(t, notificationId);
    expect(attempts.map((a) => [a.status_code, a.error])).toEqual([
      [302, 'HTTP 302'],
      [200, null],
    ]);
    expect(receiver.on('/elsewhere')).toHaveLength(0);
  });

  it('records the first 1 KiB of the answer body', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, status(500, 'e'.repeat(3000)), ok('x'.repeat(1024)), ok());
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    expect((await settled(notificationId)).status).toBe('succeeded');
    const attempts = await attemptRows(t, notificationId);
    expect(attempts.map((a) => a.response_snippet)).toEqual(['e'.repeat(1024), 'x'.repeat(1024)]);
  });

  it('cuts the recorded 1 KiB back to a character boundary, never inside a UTF-8 character', async () => {
    const g = await game();
    const path = newPath();
    // 1025 and 1025 bytes: the 1 KiB cut falls inside the last character; 1024 bytes: it does not.
    receiver.sequence(path, status(500, 'x'.repeat(1023) + 'é'), status(500, 'x'.repeat(1022) + '€'), ok('x'.repeat(1022) + 'é'));
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    expect((await settled(notificationId)).status).toBe('succeeded');
    const attempts = await attemptRows(t, notificationId);
    expect(attempts.map((a) => a.response_snippet)).toEqual(['x'.repeat(1023), 'x'.repeat(1022), 'x'.repeat(1022) + 'é']);
  });

  // PostgreSQL refuses U+0000 in text: the attempt could not be recorded, so the notification
  // was sent again each time its lease ran out, forever, and the order never became delivered.
  it('records an answer body holding a NUL byte (as U+FFFD); the notification succeeds', async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, () => ok('ok\u0000done'));
    const { order, notificationId } = await paidOrder(t, g, receiver.url + path);
    const row = await settled(notificationId);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(receiver.on(path)).toHaveLength(1);
    const attempts = await attemptRows(t, notificationId);
    expect(attempts.map((a) => [a.status_code, a.error, a.response_snippet])).toEqual([[200, null, 'ok\ufffddone']]);
    const o = await t.service.database.db.selectFrom('orders').select('status').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('delivered');
  });

  // PROTOCOL 5: success is a 2xx *within* the time-out. An answer whose body is still coming
  // when it runs out is a failed attempt (retried; the game dedupes on notification_id), but
  // the operator sees the status the game gave.
  it('keeps the status of an answer whose body stalls past the time-out; the attempt failed and is retried', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, { kind: 'stall', status: 200, body: '{"ok":' }, ok());
    const { order, notificationId } = await paidOrder(t, g, receiver.url + path);
    const row = await settled(notificationId);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 2 });
    const attempts = await attemptRows(t, notificationId);
    expect(attempts.map((a) => [a.status_code, a.error, a.response_snippet])).toEqual([
      [200, 'HTTP 200, then reading the answer body: timed out after 1500 ms', null],
      [200, null, '{"ok":true}'],
    ]);
    const o = await t.service.database.db.selectFrom('orders').select('status').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('delivered');
  });

  it('delivers a refund only after the ship_order succeeded', async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, (r, n) => (r.body.notification_type === 'ship_order' && n < 3 ? status(500) : ok()));
    const { order, notificationId, refundId } = await paidOrder(t, g, receiver.url + path, { refund: true });
    const refund = await settled(refundId!);
    expect(refund.status).toBe('succeeded');
    expect((await notificationRow(t, notificationId)).status).toBe('succeeded');
    const types = receiver.on(path).map((r) => `${r.body.notification_type}:${r.answered}`);
    expect(types).toEqual(['ship_order:500', 'ship_order:500', 'ship_order:500', 'ship_order:200', 'refund:200']);
    const refundBody = receiver.on(path)[4]!.body;
    expect(refundBody.data.order_id).toBe(order.order_id);
    expect('is_sandbox' in refundBody.data).toBe(false);
    // Refunded before the game acknowledged: the order stays refunded, never "delivered".
    const o = await t.service.database.db.selectFrom('orders').select('status').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('refunded');
  });

  it('delivers a refund after the ship_order was gone', async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, (r) => (r.body.notification_type === 'ship_order' ? status(410) : ok()));
    const { notificationId, refundId } = await paidOrder(t, g, receiver.url + path, { refund: true });
    expect((await settled(refundId!)).status).toBe('succeeded');
    expect((await notificationRow(t, notificationId)).status).toBe('gone');
    expect(receiver.on(path).map((r) => r.body.notification_type)).toEqual(['ship_order', 'refund']);
  });
});

describe('operator API', () => {
  it('lists newest first with cursor paging and filters', async () => {
    const g = await game();
    const path = newPath();
    const made: string[] = [];
    for (let i = 0; i < 3; i++) made.push((await paidOrder(t, g, receiver.url + path)).notificationId);
    for (const id of made) await settled(id);
    const p1 = await admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}&limit=2`);
    expect(p1.status).toBe(200);
    expect(p1.body.data.map((n: any) => n.notification_id)).toEqual([made[2], made[1]]);
    expect(typeof p1.body.next_cursor).toBe('string');
    const p2 = await admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}&limit=2&cursor=${p1.body.next_cursor}`);
    expect(p2.body.data.map((n: any) => n.notification_id)).toEqual([made[0]]);
    expect(p2.body.next_cursor).toBeNull();
    expect(p2.body.data[0]).toMatchObject({
      game_id: g.gameId,
      notification_type: 'ship_order',
      status: 'succeeded',
      attempt_count: 1,
      next_attempt_at: null,
      notify_url: receiver.url + path,
    });
    const none = await admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}&status=failed`);
    expect(none.body).toEqual({ data: [], next_cursor: null });
    const all = await admin(t, 'GET', `/admin/v1/notifications`);
    expect(all.body.data.length).toBeGreaterThanOrEqual(3);
    expect(all.body.data.length).toBeLessThanOrEqual(50);
  });

  it("gives an order's notifications with their attempts (for the order admin view)", async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, (r, n) => (r.body.notification_type === 'ship_order' && n === 0 ? status(502) : ok()));
    const { order, notificationId, refundId } = await paidOrder(t, g, receiver.url + path, { refund: true });
    await settled(refundId!);
    const db = t.service.database;
    const svc = new NotificationService({
      store: new NotificationStore(db),
      clock: { now: () => Date.now() },
      ids: new IdGenerator(),
      onRedeliver: () => {},
    });
    const list = await svc.ofOrder(order.order_id);
    expect(list.map((n) => [n.notification_id, n.notification_type, n.status, n.attempts.map((a) => a.status_code)])).toEqual([
      [notificationId, 'ship_order', 'succeeded', [502, 200]],
      [refundId, 'refund', 'succeeded', [200]],
    ]);
  });

  it('validates limit, status and cursor', async () => {
    const q = (s: string) => admin(t, 'GET', `/admin/v1/notifications?${s}`);
    expect((await q('limit=0')).status).toBe(400);
    expect((await q('limit=1')).status).toBe(200);
    expect((await q('limit=200')).status).toBe(200);
    const over = await q('limit=201');
    expect(over.status).toBe(400);
    expect(over.body.message).toContain('limit');
    expect((await q('limit=abc')).status).toBe(400);
    expect((await q('status=done')).status).toBe(400);
    const bad = await q('cursor=bm9wZQ');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('cursor');
    expect((await q('game_id=bad%20id')).status).toBe(400);
    expect((await q(`game_id=${'g'.repeat(64)}`)).status).toBe(200);
    expect((await q(`game_id=${'g'.repeat(65)}`)).status).toBe(400);
    expect((await q(`cursor=${'A'.repeat(1025)}`)).status).toBe(400);
    expect((await admin(t, 'GET', `/admin/v1/notifications/${'n'.repeat(64)}`)).status).toBe(404);
    expect((await admin(t, 'GET', `/admin/v1/notifications/${'n'.repeat(65)}`)).status).toBe(400);
    const noAuth = await fetch(`${t.url}/admin/v1/notifications`);
    expect(noAuth.status).toBe(401);
  });

  // A password in a notify_url is never sent (the service signs its requests itself); the
  // operator API does not hand it out either.
  it('shows a notify_url password as ***, in the notification, the order and the listings', async () => {
    const g = await game();
    const url = new URL(receiver.url + newPath());
    url.username = 'game';
    url.password = 's3cret-pass';
    const { order, notificationId } = await paidOrder(t, g, url.toString());
    await settled(notificationId);
    const shown = [
      (await admin(t, 'GET', `/admin/v1/notifications/${notificationId}`)).body.notify_url,
      (await admin(t, 'GET', `/admin/v1/orders/${order.order_id}`)).body.notify_url,
      (await admin(t, 'GET', `/admin/v1/orders/${order.order_id}`)).body.notifications[0].notify_url,
      (await admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}`)).body.data[0].notify_url,
      (await admin(t, 'GET', `/admin/v1/orders?game_id=${g.gameId}`)).body.data[0].notify_url,
    ];
    for (const u of shown) {
      expect(u).toContain('game:***@');
      expect(u).not.toContain('s3cret-pass');
    }
  });

  it('shows one notification with its attempts', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, status(500, 'boom'), ok());
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    await settled(notificationId);
    const r = await admin(t, 'GET', `/admin/v1/notifications/${notificationId}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ notification_id: notificationId, status: 'succeeded', attempt_count: 2 });
    expect(JSON.parse(r.body.body).notification_id).toBe(notificationId);
    expect(r.body.attempts.map((a: any) => [a.status_code, a.error, a.response_snippet])).toEqual([
      [500, 'HTTP 500', 'boom'],
      [200, null, '{"ok":true}'],
    ]);
    expect((await admin(t, 'GET', '/admin/v1/notifications/ntf_nope')).status).toBe(404);
  });

  it('redelivers one notification (gone -> pending -> succeeded) and audits it', async () => {
    const g = await game();
    const path = newPath();
    receiver.sequence(path, status(410), ok());
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    expect((await settled(notificationId)).status).toBe('gone');

    const r = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {});
    expect(r.status).toBe(200);
    expect(r.body.notification_id).toBe(notificationId);
    const row = await settled(notificationId);
    expect(row).toMatchObject({ status: 'succeeded', attempts: 1 });
    expect(row.window_started_at).toBeGreaterThanOrEqual(row.created_at);
    expect(receiver.on(path).map((x) => x.answered)).toEqual(['410', '200']);
    expect((await attemptRows(t, notificationId)).map((a) => a.status_code)).toEqual([410, 200]);

    const audit = await t.service.database.db.selectFrom('audit_log').selectAll().where('target', '=', notificationId).execute();
    expect(audit.map((a) => a.action)).toEqual(['notification.redeliver']);
    expect(JSON.parse(audit[0]!.detail!)).toEqual({ previous_status: 'gone' });

    // A succeeded one may be sent again too (the receiver dedupes on notification_id).
    const again = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {});
    expect(again.status).toBe(200);
    await until('second redelivery', () => receiver.on(path).length === 3);
    expect((await settled(notificationId)).status).toBe('succeeded');
  });

  it('refuses to redeliver a pending notification (409) and an unknown one (404)', async () => {
    const g = await game();
    const path = newPath();
    receiver.script(path, () => status(500));
    const { notificationId } = await paidOrder(t, g, receiver.url + path);
    const r = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {});
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('invalid_state');
    expect((await admin(t, 'POST', '/admin/v1/notifications/ntf_nope/redeliver', {})).status).toBe(404);
  });

  it('refuses to redeliver the ship_order of a refunded order (409), and still redelivers its refund', async () => {
    const g = await game();
    const path = newPath();
    const { notificationId, refundId } = await paidOrder(t, g, receiver.url + path, { refund: true });
    expect((await settled(refundId!)).status).toBe('succeeded');
    expect((await notificationRow(t, notificationId)).status).toBe('succeeded');

    // Sent after the refund, it would make the game grant goods the player was refunded for.
    const r = await admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {});
    expect(r.status).toBe(409);
    expect(r.body.error).toBe('invalid_state');
    expect(r.body.message).toContain('refunded');
    expect(await notificationRow(t, notificationId)).toMatchObject({ status: 'succeeded', attempts: 1 });
    const audit = await t.service.database.db.selectFrom('audit_log').selectAll().where('target', '=', notificationId).execute();
    expect(audit).toEqual([]);

    expect((await admin(t, 'POST', `/admin/v1/notifications/${refundId}/redeliver`, {})).status).toBe(200);
    await until('the refund sent again', () => receiver.on(path).length === 3);
    expect((await settled(refundId!)).status).toBe('succeeded');
    expect(receiver.on(path).map((x) => x.body.notification_type)).toEqual(['ship_order', 'refund', 'refund']);
  });
});

describe('redeliver racing a refund (PostgreSQL: read committed)', () => {
  // A refund not yet committed when redeliver reads the order: redeliver must wait for it and
  // then refuse, or the game would get the ship_order after the refund. The refund here is the
  // status change alone, held open in a transaction of the test's own.
  it.runIf(TEST_DB === 'postgres')('redeliver waits for a concurrent refund of the order, then answers 409', async () => {
    const g = await game();
    const path = newPath();
    const { order, notificationId } = await paidOrder(t, g, receiver.url + path);
    expect((await settled(notificationId)).status).toBe('succeeded');
    const db = t.service.database.db;
    let answer: Promise<Answer> | undefined;
    await db.transaction().execute(async (trx) => {
      await sql`update orders set status = 'refunded', refunded_at = ${Date.now()} where order_id = ${order.order_id}`.execute(trx);
      answer = admin(t, 'POST', `/admin/v1/notifications/${notificationId}/redeliver`, {});
      const waiting = async () => {
        const r = await sql<{ n: string }>`select count(*) as n from pg_stat_activity where wait_event_type = 'Lock' and query ilike '%orders%'`.execute(db);
        return Number(r.rows[0]!.n) > 0;
      };
      // Either redeliver answered while the refund was uncommitted (the bug), or it waits.
      await Promise.race([answer, until('redeliver to wait on the order row', waiting)]);
    });
    const r = await answer!;
    expect([r.status, r.body.error]).toEqual([409, 'invalid_state']);
    expect((await notificationRow(t, notificationId)).status).toBe('succeeded');
  });
});

describe('redelivering all failed notifications of a game (1 s retry window)', () => {
  let s: TestService;
  beforeAll(async () => {
    s = await startService({ env: { NOTIFY_MAX_AGE_SECONDS: '1', NOTIFY_RETRY_BASE_MS: String(RETRY_BASE_MS), NOTIFY_POLL_INTERVAL_MS: '50' } });
  });
  afterAll(async () => s?.stop());

  const finished = (id: string) =>
    until(`notification ${id} to settle`, async () => {
      const r = await notificationRow(s, id);
      return r.status !== 'pending' ? r : null;
    });

  it('takes failed ones created since the time; leaves gone ones and the ship_order of a refunded order', async () => {
    const g = await createGame(s);
    const other = await createGame(s);
    keys.set(g.gameId, [g.secret]);
    keys.set(other.gameId, [other.secret]);
    const path = newPath();
    const gonePath = newPath();
    let open = false;
    receiver.script(path, (r) => (open || r.body.notification_type === 'refund' ? ok() : status(500)));
    receiver.script(gonePath, () => (open ? ok() : status(410)));
    const old = await paidOrder(s, g, receiver.url + path, { now: Date.now() - 60_000 });
    const since = Date.now() - 1000;
    const a = await paidOrder(s, g, receiver.url + path);
    const b = await paidOrder(s, g, receiver.url + path);
    const gone = await paidOrder(s, g, receiver.url + gonePath);
    const refunded = await paidOrder(s, g, receiver.url + path, { refund: true });
    const o = await paidOrder(s, other, receiver.url + path);
    for (const n of [old, a, b, refunded, o]) expect((await finished(n.notificationId)).status).toBe('failed');
    expect((await finished(gone.notificationId)).status).toBe('gone');
    expect((await finished(refunded.refundId!)).status).toBe('succeeded');
    const shipOrdersOf = (orderId: string) => receiver.on(path).filter((r) => r.body.data.order_id === orderId && r.body.notification_type === 'ship_order').length;
    const refundedSent = shipOrdersOf(refunded.order.order_id);

    open = true;
    const r = await admin(s, 'POST', `/admin/v1/games/${g.gameId}/notifications/redeliver`, { since });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ count: 2 });
    expect((await finished(a.notificationId)).status).toBe('succeeded');
    expect((await finished(b.notificationId)).status).toBe('succeeded');
    expect((await notificationRow(s, old.notificationId)).status).toBe('failed');
    expect((await notificationRow(s, o.notificationId)).status).toBe('failed');
    // A 410 asked for no more retries: only an operator's one-by-one redelivery sends it again.
    expect((await notificationRow(s, gone.notificationId)).status).toBe('gone');
    expect(receiver.on(gonePath)).toHaveLength(1);
    expect((await notificationRow(s, refunded.notificationId)).status).toBe('failed');
    expect(shipOrdersOf(refunded.order.order_id)).toBe(refundedSent);
    const audit = await s.service.database.db.selectFrom('audit_log').selectAll().where('target', '=', g.gameId).where('action', '=', 'notification.redeliver_all').execute();
    expect(JSON.parse(audit[0]!.detail!)).toEqual({ since, count: 2 });

    const body = (x: unknown) => admin(s, 'POST', `/admin/v1/games/${g.gameId}/notifications/redeliver`, x);
    expect((await body({ since: -1 })).status).toBe(400);
    expect((await body({ since: 0 })).body).toEqual({ count: 1 }); // the old one
    expect((await finished(old.notificationId)).status).toBe('succeeded');
    expect((await body({ since: 0 })).body).toEqual({ count: 0 });
    expect((await body({ since: 253_402_300_799_999 })).body).toEqual({ count: 0 });
    expect((await body({ since: 253_402_300_800_000 })).status).toBe(400);
    expect((await body({ since: 1.5 })).status).toBe(400);
    expect((await body({ since: '5' })).status).toBe(400);
    expect((await body({})).status).toBe(400);
    expect((await admin(s, 'POST', '/admin/v1/games/nope/notifications/redeliver', { since: 0 })).status).toBe(404);

    // One by one, the gone one may still be sent again.
    expect((await admin(s, 'POST', `/admin/v1/notifications/${gone.notificationId}/redeliver`, {})).status).toBe(200);
    expect((await finished(gone.notificationId)).status).toBe('succeeded');
  });
});

describe('notify_url by host name', () => {
  // Real notify URLs name hosts. Node's connect resolves them through our lookup with all: true
  // (happy eyeballs); the lookup once answered one address, and every such delivery failed.
  it('delivers to http://localhost:<port>/... (private addresses allowed outside production)', async () => {
    const g = await game();
    const path = newPath();
    const { notificationId } = await paidOrder(t, g, receiver.url.replace('127.0.0.1', 'localhost') + path);
    await until('delivered by host name', () => receiver.on(path).length > 0);
    expect((await settled(notificationId)).status).toBe('succeeded');
  });
});

const machineNameIsInternal = (await dns.lookup(os.hostname(), { all: true }).catch(() => [])).some((a) => isPrivateAddress(a.address));
if (!machineNameIsInternal) console.warn(`*** ${os.hostname()} does not resolve to an internal address: the host-name case of the outbound checks is SKIPPED`);

describe('outbound safety in production', () => {
  it.each<[string, (port: string) => string]>([
    ['an IPv4-mapped IPv6 literal', (port: string) => `http://[::ffff:127.0.0.1]:${port}`],
    ['a NAT64 literal carrying 127.0.0.1', (port: string) => `http://[64:ff9b::7f00:1]:${port}`],
    // The machine's own name, which /etc/hosts maps to 127.0.0.1 on these machines: refused by
    // the connect-time lookup, not by the URL check (which knows only the name "localhost").
    ...(machineNameIsInternal ? [['the machine\'s host name, which resolves to an internal address', (port: string) => `http://${os.hostname()}:${port}`] as [string, (port: string) => string]] : []),
  ])('refuses a notify_url given as %s, and calls nothing', async (_n, origin) => {
    const p = await startService({
      env: { NODE_ENV: 'production', ALLOW_PRIVATE_NOTIFY_URLS: '0', NOTIFY_RETRY_BASE_MS: '20', NOTIFY_POLL_INTERVAL_MS: '50' },
    });
    try {
      const g = await createGame(p);
      const path = newPath();
      const { notificationId } = await paidOrder(p, g, origin(new URL(receiver.url).port) + path);
      await until('a refused attempt', async () => (await attemptRows(p, notificationId)).length >= 1);
      expect((await attemptRows(p, notificationId))[0]!.error).toMatch(/^refused: .*internal address/);
      expect(receiver.on(path)).toHaveLength(0);
    } finally {
      await p.stop();
    }
  });

  it('refuses a notify_url on a private address, records the refusal, and keeps retrying', async () => {
    const p = await startService({
      env: { NODE_ENV: 'production', ALLOW_PRIVATE_NOTIFY_URLS: '0', NOTIFY_RETRY_BASE_MS: '20', NOTIFY_POLL_INTERVAL_MS: '50' },
    });
    try {
      const g = await createGame(p);
      const path = newPath();
      const { notificationId } = await paidOrder(p, g, receiver.url + path);
      await until('two refused attempts', async () => (await attemptRows(p, notificationId)).length >= 2);
      const attempts = await attemptRows(p, notificationId);
      expect(attempts[0]).toMatchObject({ status_code: null, latency_ms: expect.any(Number) });
      expect(attempts[0]!.error).toMatch(/^refused: .*internal address/);
      expect((await notificationRow(p, notificationId)).status).toBe('pending');
      expect(receiver.on(path)).toHaveLength(0);
    } finally {
      await p.stop();
    }
  });
});

describe('claiming (the store on a real database)', () => {
  it('claims at most `limit` due notifications, and never one already claimed', async () => {
    const g = await game();
    // Due in a week: the service's own dispatcher leaves them be.
    const later = Date.now() + 7 * 86_400_000;
    for (let i = 0; i < 5; i++) await paidOrder(t, g, receiver.url + newPath(), { now: later });
    const db = t.service.database;
    const store = new NotificationStore(db);
    const [a, b] = await Promise.all([store.claimDue(later, 2, later + 60_000, 'claim-a'), store.claimDue(later, 2, later + 60_000, 'claim-b')]);
    expect(a).toHaveLength(2);
    expect(b).toHaveLength(2);
    const ids = [...a, ...b].map((n) => n.notification_id);
    expect(new Set(ids).size).toBe(4);
    const held = await db.db.selectFrom('notifications').select(['notification_id', 'locked_by']).where('locked_by', 'in', ['claim-a', 'claim-b']).execute();
    expect(held.map((r) => r.notification_id).sort()).toEqual([...ids].sort());
  });
});

describe('recording an attempt (the store on a real database)', () => {
  const attemptOf = (notificationId: string, id: string, at: number) => ({
    attempt_id: id,
    notification_id: notificationId,
    at,
    status_code: 200,
    latency_ms: 3,
    error: null,
    response_snippet: null,
  });

  it('when the database refuses an attempt record, records it without the answer body instead of sending again', async () => {
    const g = await game();
    const path = newPath();
    // Due in a week, so the service's own dispatcher leaves it be; the one made here runs on a
    // clock set then, with a receiver that checks signatures against that clock.
    const later = Date.now() + 7 * 86_400_000;
    const there = await new Receiver({ keys, now: () => later }).start();
    const { order, notificationId } = await paidOrder(t, g, there.url + path, { now: later });
    const db = t.service.database;
    /** Refuses any attempt that carries an answer body, as PostgreSQL refused one holding U+0000. */
    class RefusingStore extends NotificationStore {
      override recordAttempt(...args: Parameters<NotificationStore['recordAttempt']>): Promise<boolean> {
        if (args[1].response_snippet !== null) return Promise.reject(new Error('invalid byte sequence for encoding "UTF8": 0x00'));
        return super.recordAttempt(...args);
      }
    }
    const outbound = new OutboundClient({ blockPrivate: false });
    const dispatcher = new NotificationDispatcher({
      store: new RefusingStore(db),
      keys: { snapshot: async () => ({ secrets: [g.secret] }) },
      outbound,
      clock: { now: () => later },
      ids: new IdGenerator(),
      logger: pino({ level: 'silent' }),
      settings: { timeoutMs: 1500, maxAgeMs: 7 * 86_400_000, concurrency: 4, perHostConcurrency: 4, pollIntervalMs: 20, retryBaseMs: 40 },
    });
    dispatcher.start();
    try {
      const row = await settled(notificationId);
      expect(row).toMatchObject({ status: 'succeeded', attempts: 1, last_error: null });
    } finally {
      await dispatcher.stop();
      await outbound.close();
      await there.close();
    }
    expect(there.on(path)).toHaveLength(1);
    const attempts = await attemptRows(t, notificationId);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ status_code: 200, response_snippet: null });
    expect(attempts[0]!.error).toMatch(/answer body not stored/);
    const o = await db.db.selectFrom('orders').select('status').where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    expect(o.status).toBe('delivered');
  });

  it('under a lost lease records the attempt and changes nothing else; under its lease delivers the order with its event', async () => {
    const g = await game();
    const now = Date.now();
    // Claimed by a dispatcher ('crashed') for an hour: the service's own dispatcher leaves it be.
    const { order, notificationId } = await paidOrder(t, g, receiver.url + newPath(), { lockedUntil: now + 3_600_000 });
    const db = t.service.database;
    const store = new NotificationStore(db);
    const ids = new IdGenerator();
    const outcome = { status: 'succeeded' as const, attempts: 1, next_attempt_at: now, last_error: null, delivered_at: now };
    const delivery = { orderId: order.order_id, eventId: `oev_${ids.next(now)}`, notificationId };

    expect(await store.recordAttempt({ notificationId, token: 'another', now }, attemptOf(notificationId, `nta_${ids.next(now)}`, now), outcome, delivery)).toBe(false);
    expect(await attemptRows(t, notificationId)).toHaveLength(1);
    expect(await notificationRow(t, notificationId)).toMatchObject({ status: 'pending', locked_by: 'crashed', attempts: 0 });
    const orderRow = () => db.db.selectFrom('orders').selectAll().where('order_id', '=', order.order_id).executeTakeFirstOrThrow();
    const events = () => db.db.selectFrom('order_events').selectAll().where('order_id', '=', order.order_id).execute();
    expect((await orderRow()).status).toBe('paid');
    expect(await events()).toHaveLength(0);

    expect(await store.recordAttempt({ notificationId, token: 'crashed', now }, attemptOf(notificationId, `nta_${ids.next(now)}`, now), outcome, delivery)).toBe(true);
    expect(await attemptRows(t, notificationId)).toHaveLength(2);
    expect(await notificationRow(t, notificationId)).toMatchObject({ status: 'succeeded', locked_by: null, locked_until: 0, attempts: 1, delivered_at: now, updated_at: now });
    expect(await orderRow()).toMatchObject({ status: 'delivered', delivered_at: now, updated_at: now });
    expect(await events()).toEqual([
      { event_id: delivery.eventId, order_id: order.order_id, from_status: 'paid', to_status: 'delivered', at: now, detail: JSON.stringify({ notification_id: notificationId }) },
    ]);
  });
});
