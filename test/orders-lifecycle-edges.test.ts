import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TransactionRunner } from '../src/db/index.js';
import { ManualClock } from '../src/lib/clock.js';
import { IdGenerator } from '../src/lib/ids.js';
import { NotificationDispatcher } from '../src/notifications/dispatcher.js';
import { OrderLifecycle } from '../src/orders/lifecycle.js';
import { OrderStore } from '../src/orders/store.js';
import { OrderSweeper } from '../src/orders/sweeper.js';
import { TEST_DB } from './helpers/db.js';
import { createOrder, eventsOf, notificationsOf, orderRow, pay, statusOf, until } from './helpers/orders.js';
import { Receiver, until as untilValue } from './helpers/receiver.js';
import { ADMIN_TOKEN, admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * Edges of the order lifecycle (docs/orders.md "Order states", PROTOCOL 6 and 11) that only show
 * end to end: what a cancel records (event, actor and reason, canceled_at, audit), a refund of an
 * expired order, a refund and its notification committing together, the notifier woken by a
 * refund, the paid event's payment and a late payment in the order detail, and the expiry
 * sweeper's stop() and its recovery from a failed sweep. On a manual clock; orders live 60 s.
 */
const TTL_MS = 60_000;

let t: TestService;
let clock: ManualClock;
let game: TestGame;
beforeAll(async () => {
  clock = new ManualClock(Date.now());
  // The service's sweeper stays out of the way; the tests that want a sweep run one.
  t = await startService({ clock, env: { SWEEP_INTERVAL_MS: '600000' } });
  game = await createGame(t, { order_ttl_seconds: TTL_MS / 1000 });
});
afterAll(async () => t?.stop());

const db = () => t.service.database.db;
const serviceSweeper = (s: TestService) => s.service.jobs.find((j): j is OrderSweeper => j instanceof OrderSweeper)!;
const auditOf = (orderId: string) => db().selectFrom('audit_log').selectAll().where('target', '=', orderId).execute();

/** An operator action with `X-Operator: <operator>` (the audit log's actor). */
async function operatorPost(path: string, body: unknown, operator: string) {
  const res = await fetch(t.url + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'x-operator': operator },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

describe('an operator cancel (created -> canceled)', () => {
  let orderId: string;
  let canceledAt: number;
  let answer: { status: number; body: any };
  beforeAll(async () => {
    const o = await createOrder(t, game);
    orderId = o.order_id;
    clock.advance(1_000);
    canceledAt = clock.now();
    answer = await operatorPost(`/admin/v1/orders/${orderId}/cancel`, { reason: 'player asked' }, 'alice');
  });

  it('answers 200 with the canceled order', () => {
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ order_id: orderId, status: 'canceled' });
  });

  it('adds a created -> canceled row to order_events', async () => {
    const events = await eventsOf(t, orderId);
    expect(events.map((e) => [e.from_status, e.to_status, e.at])).toEqual([['created', 'canceled', canceledAt]]);
  });

  it("the cancel event's detail records who canceled and why (the authenticated actor, never X-Operator; reason)", async () => {
    const [event] = await eventsOf(t, orderId);
    expect(JSON.parse(event!.detail!)).toEqual({ actor: 'ADMIN_TOKEN', reason: 'player asked' });
    const d = (await admin(t, 'GET', `/admin/v1/orders/${orderId}`)).body;
    expect(d.events.map((e: { from_status: string | null; to_status: string; detail: unknown }) => [e.from_status, e.to_status, e.detail])).toEqual([
      [null, 'created', null],
      ['created', 'canceled', { actor: 'ADMIN_TOKEN', reason: 'player asked' }],
    ]);
  });

  it('sets canceled_at: in the database, and in the answer, the listing and the detail', async () => {
    expect(await orderRow(t, orderId)).toMatchObject({ status: 'canceled', canceled_at: canceledAt, updated_at: canceledAt });
    expect(answer.body.canceled_at).toBe(canceledAt);
    const listed = (await admin(t, 'GET', `/admin/v1/orders?game_id=${game.gameId}&status=canceled`)).body.data;
    expect(listed.map((o: { order_id: string; canceled_at: number | null }) => [o.order_id, o.canceled_at])).toEqual([[orderId, canceledAt]]);
    const detail = (await admin(t, 'GET', `/admin/v1/orders/${orderId}`)).body;
    expect([detail.status, detail.canceled_at]).toEqual(['canceled', canceledAt]);
  });

  it('writes one audit entry: order.cancel, the actor, from/to and the reason', async () => {
    const audit = await auditOf(orderId);
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ action: 'order.cancel', actor: 'ADMIN_TOKEN', target: orderId, at: canceledAt });
    expect(JSON.parse(audit[0]!.detail!)).toEqual({ from: 'created', to: 'canceled', reason: 'player asked' });
  });
});

describe('refunding an expired order', () => {
  it('answers 409 invalid_state and changes nothing', async () => {
    const o = await createOrder(t, game);
    clock.advance(TTL_MS);
    await serviceSweeper(t).sweepOnce();
    expect(await statusOf(t, o.order_id)).toBe('expired');
    const before = await orderRow(t, o.order_id);
    clock.advance(1_000);

    const r = await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, { reason: 'try' });
    expect([r.status, r.body.error]).toEqual([409, 'invalid_state']);
    expect(r.body.message).toContain('expired');
    expect(await orderRow(t, o.order_id)).toEqual(before);
    expect((await eventsOf(t, o.order_id)).map((e) => [e.from_status, e.to_status])).toEqual([['created', 'expired']]);
    expect(await notificationsOf(t, o.order_id)).toEqual([]);
    expect(await auditOf(o.order_id)).toEqual([]);
  });
});

describe('a refund and its refund notification commit together (outbox)', () => {
  // A fault in the database itself (a trigger refusing one row) stands in for a failed write.
  // On SQLite the refund's job runs in its own savepoint of a group commit; on PostgreSQL it is
  // a transaction of its own.
  function refusing(table: 'notifications' | 'audit_log', when: string) {
    const name = `refuse_${table}`;
    const add =
      TEST_DB === 'sqlite'
        ? [sql`create trigger ${sql.raw(name)} before insert on ${sql.raw(table)} when ${sql.raw(when.replaceAll('$', 'new.'))}
               begin select raise(abort, 'write refused'); end`]
        : [
            sql`create function ${sql.raw(name)}() returns trigger language plpgsql as $$ begin
                  if ${sql.raw(when.replaceAll('$', 'new.'))} then raise exception 'write refused'; end if;
                  return new; end $$`,
            sql`create trigger ${sql.raw(name)} before insert on ${sql.raw(table)} for each row execute function ${sql.raw(name)}()`,
          ];
    const drop = TEST_DB === 'sqlite' ? [sql`drop trigger ${sql.raw(name)}`] : [sql`drop trigger ${sql.raw(name)} on ${sql.raw(table)}`, sql`drop function ${sql.raw(name)}()`];
    return {
      async during<T>(fn: () => Promise<T>): Promise<T> {
        for (const q of add) await q.execute(db());
        try {
          return await fn();
        } finally {
          for (const q of drop) await q.execute(db());
        }
      },
    };
  }

  async function paidOrder() {
    const o = await createOrder(t, game);
    expect((await pay(t, o.order_token)).status).toBe(200);
    return o;
  }

  /** The refund left no trace: the order paid, no refund event, notification or audit entry. */
  async function expectNotRefunded(orderId: string) {
    expect(await orderRow(t, orderId)).toMatchObject({ status: 'paid', refunded_at: null });
    expect((await eventsOf(t, orderId)).map((e) => [e.from_status, e.to_status])).toEqual([['created', 'paid']]);
    expect((await notificationsOf(t, orderId)).map((n) => n.type)).toEqual(['ship_order']);
    expect(await auditOf(orderId)).toEqual([]);
  }

  it('on success both exist: the order refunded (with its event) and its refund notification', async () => {
    const o = await paidOrder();
    const r = await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {});
    expect([r.status, r.body.status]).toEqual([200, 'refunded']);
    expect(await statusOf(t, o.order_id)).toBe('refunded');
    expect((await eventsOf(t, o.order_id)).map((e) => [e.from_status, e.to_status])).toEqual([['created', 'paid'], ['paid', 'refunded']]);
    const ntfs = await notificationsOf(t, o.order_id);
    expect(ntfs.map((n) => n.type)).toEqual(['ship_order', 'refund']);
    expect(JSON.parse(ntfs[1]!.body)).toMatchObject({ notification_type: 'refund', data: { order_id: o.order_id } });
  });

  it('when the refund notification cannot be written, the refund is not applied and the answer is an error', async () => {
    const o = await paidOrder();
    const r = await refusing('notifications', "$type = 'refund'").during(() => admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {}));
    expect([r.status, r.body.error]).toEqual([500, 'internal_error']);
    await expectNotRefunded(o.order_id);
    // Nothing is left half done: a retry succeeds.
    expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {})).status).toBe(200);
    expect((await notificationsOf(t, o.order_id)).map((n) => n.type)).toEqual(['ship_order', 'refund']);
  });

  it('when the refund fails after its notification was written (the audit entry), no refund notification is left', async () => {
    const o = await paidOrder();
    const r = await refusing('audit_log', "$action = 'order.refund'").during(() => admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {}));
    expect([r.status, r.body.error]).toEqual([500, 'internal_error']);
    // A refund notification committed apart from the refund would tell the game of a refund
    // that never happened.
    await expectNotRefunded(o.order_id);
  });
});

describe('the order detail: payments', () => {
  it("the paid event's detail names the payment that paid the order (sandbox pay)", async () => {
    const o = await createOrder(t, game);
    expect((await pay(t, o.order_token)).status).toBe(200);
    const d = (await admin(t, 'GET', `/admin/v1/orders/${o.order_id}`)).body;
    expect(d.payments).toHaveLength(1);
    const paymentId = d.payments[0].payment_id;
    expect(typeof paymentId).toBe('string');
    expect(d.events[1]).toMatchObject({ from_status: 'created', to_status: 'paid' });
    expect(d.events[1].detail).toEqual({ payment_id: paymentId, provider: 'sandbox' });
  });

  it('payments[].late is true for a payment confirmed after expiry, false for one in time', async () => {
    const late = await createOrder(t, game);
    const onTime = await createOrder(t, game);
    expect((await pay(t, onTime.order_token)).status).toBe(200);
    clock.advance(TTL_MS);
    const out = await t.service.payments.confirm('sandbox', { provider_txn_id: `late-${late.order_id}`, order_id: late.order_id, amount: 600, currency: 'CNY' });
    expect(out).toMatchObject({ status: 'accepted' });

    const d = (await admin(t, 'GET', `/admin/v1/orders/${late.order_id}`)).body;
    expect(d).toMatchObject({ status: 'paid', late_payment: true });
    expect(d.payments.map((p: { status: string; late: boolean }) => [p.status, p.late])).toEqual([['accepted', true]]);
    const inTime = (await admin(t, 'GET', `/admin/v1/orders/${onTime.order_id}`)).body;
    expect(inTime.payments.map((p: { late: boolean }) => p.late)).toEqual([false]);
  });
});

describe('after a refund commits, the notifier is woken at once', () => {
  const POLL_MS = 60_000;
  let s: TestService;
  let g: TestGame;
  let receiver: Receiver;
  beforeAll(async () => {
    const keys = new Map<string, string[]>();
    receiver = await new Receiver({ keys, now: () => Date.now() }).start();
    // Without a wake-up, a notification written now waits for the next poll, a minute away.
    s = await startService({ env: { NOTIFY_POLL_INTERVAL_MS: String(POLL_MS) } });
    g = await createGame(s);
    keys.set(g.gameId, [g.secret]);
  });
  afterAll(async () => {
    await s?.stop();
    await receiver?.close();
  });

  it('the refund notification is delivered well before the next poll', async () => {
    // Watches (and leaves alone) when the dispatcher next looks for due notifications.
    const dispatcher = s.service.jobs.find((j): j is NotificationDispatcher => j instanceof NotificationDispatcher)!;
    const inner = dispatcher as unknown as { schedule(ms: number): void; ticking: Promise<void> | null; inflight: Set<Promise<void>> };
    const schedule = inner.schedule.bind(dispatcher);
    let nextLookMs = -1;
    inner.schedule = (ms: number) => {
      nextLookMs = ms;
      schedule(ms);
    };
    try {
      const o = await createOrder(s, g, { notify_url: `${receiver.url}/notify` });
      expect((await pay(s, o.order_token)).status).toBe(200);
      await until(async () => (await statusOf(s, o.order_id)) === 'delivered', 10_000, 'the ship_order to be acknowledged');
      // The dispatcher is idle until its next poll: the ship_order's attempt is over (which wakes
      // the dispatcher), and its look for more found none and set the next poll.
      await until(async () => inner.inflight.size === 0 && inner.ticking === null && nextLookMs === POLL_MS, 10_000, 'the dispatcher to go idle');

      const refunded = await admin(s, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {});
      expect(refunded.status).toBe(200);
      const got = await untilValue('the refund notification', () => receiver.on('/notify').find((r) => r.body?.notification_type === 'refund'), 5_000);
      expect(got.signatureProblem).toBeNull();
      expect(got.body.data.order_id).toBe(o.order_id);
    } finally {
      delete (inner as { schedule?: unknown }).schedule; // back to the prototype's
    }
  });
});

describe('the expiry sweeper', () => {
  it('stop() during a sweep: the order at hand is finished, the sweep returns before the next one', async () => {
    const sclock = new ManualClock(Date.now());
    const s = await startService({ clock: sclock, env: { SWEEP_INTERVAL_MS: '600000' } });
    try {
      const g = await createGame(s, { order_ttl_seconds: TTL_MS / 1000 });
      const orders = [];
      for (let i = 0; i < 3; i++) orders.push(await createOrder(s, g));
      sclock.advance(TTL_MS);
      const database = s.service.database;
      // The sweeper's database, as given: stop() is called while the first order's expiry is
      // in its transaction.
      let sweeper: OrderSweeper | null = null;
      let stopping: Promise<void> | null = null;
      const transaction: TransactionRunner = (fn, options) =>
        database.transaction(async (trx) => {
          const r = await fn(trx);
          stopping ??= sweeper!.stop();
          return r;
        }, options);
      const store = new OrderStore({ ...database, transaction });
      sweeper = new OrderSweeper({ store, lifecycle: new OrderLifecycle({ store, ids: new IdGenerator() }), clock: sclock, intervalMs: 600_000 });

      expect(await sweeper.sweepOnce()).toBe(1);
      await stopping;
      const statuses = await Promise.all(orders.map((o) => statusOf(s, o.order_id)));
      expect(statuses.filter((st) => st === 'expired')).toHaveLength(1);
      expect(statuses.filter((st) => st === 'created')).toHaveLength(2);
    } finally {
      await s.stop();
    }
  });

  it('carries on after a failed sweep: a later sweep expires the order', async () => {
    const sclock = new ManualClock(Date.now());
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const s = await startService({ clock: sclock, env: { SWEEP_INTERVAL_MS: '20', LOG_LEVEL: 'error' }, logDestination: sink });
    const sdb = s.service.database.db;
    const add =
      TEST_DB === 'sqlite'
        ? [sql`create trigger refuse_expiry before update on orders when new.status = 'expired' begin select raise(abort, 'expiry refused'); end`]
        : [
            sql`create function refuse_expiry() returns trigger language plpgsql as $$ begin
                  if new.status = 'expired' then raise exception 'expiry refused'; end if;
                  return new; end $$`,
            sql`create trigger refuse_expiry before update on orders for each row execute function refuse_expiry()`,
          ];
    const drop = TEST_DB === 'sqlite' ? [sql`drop trigger refuse_expiry`] : [sql`drop trigger refuse_expiry on orders`, sql`drop function refuse_expiry()`];
    try {
      const g = await createGame(s, { order_ttl_seconds: TTL_MS / 1000 });
      const o = await createOrder(s, g);
      for (const q of add) await q.execute(sdb);
      let dropped = false;
      try {
        sclock.advance(TTL_MS);
        const failed = () => lines.some((l) => JSON.parse(l).msg === 'order expiry sweep failed');
        await until(async () => failed(), 10_000, 'a failed sweep');
        expect(await statusOf(s, o.order_id)).toBe('created');
        for (const q of drop) await q.execute(sdb);
        dropped = true;
      } finally {
        if (!dropped) for (const q of drop) await q.execute(sdb);
      }
      await until(async () => (await statusOf(s, o.order_id)) === 'expired', 10_000, 'a later sweep to expire the order');
      expect((await eventsOf(s, o.order_id)).map((e) => [e.from_status, e.to_status])).toEqual([['created', 'expired']]);
    } finally {
      await s.stop();
    }
  });
});
