import { CompiledQuery, type Kysely, type Selectable, type Transaction, type Updateable } from 'kysely';
import type { DB, OrderEventsTable, OrderStatus, OrdersTable } from '../db/schema.js';
import { prepare, prepareNamed } from '../db/prepared.js';
import type { StoreDatabase } from '../db/database.js';
import { DatabaseStore } from '../db/database-store.js';

export type OrderRow = Selectable<OrdersTable>;
export type OrderEventRow = Selectable<OrderEventsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Column order of a full order row (the prepared insert's parameter order). */
export const ORDER_COLUMNS = [
  'order_id', 'game_id', 'reference_id', 'combo_id', 'product_id', 'platform', 'notify_url', 'quantity', 'meta',
  'context', 'amount', 'currency', 'status', 'token_secret', 'is_sandbox', 'late_payment',
  'created_at', 'expires_at', 'updated_at', 'paid_at', 'delivered_at', 'expired_at', 'canceled_at', 'refunded_at',
] as const satisfies readonly (keyof OrderRow)[];

export const EVENT_COLUMNS = ['event_id', 'order_id', 'from_status', 'to_status', 'at', 'detail'] as const satisfies readonly (keyof OrderEventRow)[];

// The prepared inserts' parameters, field by field in column order. Not `COLUMNS.map((c) =>
// row[c])`: a load by a varying key goes megamorphic in V8, a slow lookup for every field of
// every insert. test/unit/insert-params.test.ts holds these to the column lists.
export const orderParams = (r: OrderRow): unknown[] => [
  r.order_id, r.game_id, r.reference_id, r.combo_id, r.product_id, r.platform, r.notify_url, r.quantity, r.meta,
  r.context, r.amount, r.currency, r.status, r.token_secret, r.is_sandbox, r.late_payment,
  r.created_at, r.expires_at, r.updated_at, r.paid_at, r.delivered_at, r.expired_at, r.canceled_at, r.refunded_at,
];
export const eventParams = (r: OrderEventRow): unknown[] => [r.event_id, r.order_id, r.from_status, r.to_status, r.at, r.detail];

/**
 * PostgreSQL: a new order in ONE statement, so without BEGIN and COMMIT (one round trip where
 * the transaction takes five). The row comes as one JSON parameter that the orders row type
 * converts, column by column. Nothing is written when the reference_id is taken or the player
 * has a record in `players`, the only players the purchase guard checks (bans, minors' limits:
 * PROTOCOL 12); those take the transaction.
 */
const CREATE_AT_ONCE = `insert into orders (${ORDER_COLUMNS.join(', ')})
select ${ORDER_COLUMNS.join(', ')} from json_populate_record(null::orders, $1::json)
where not exists (select 1 from players where game_id = $2 and combo_id = $3)
on conflict (game_id, reference_id) do nothing
returning order_id`;

/** Queries for orders and their state-change events. */
export class OrderStore extends DatabaseStore {
  // The create-order path runs these on every request: compiled once (see db/prepared.ts).
  private readonly byReference;
  private readonly insertRowUnlessReferenced;
  private readonly insertEventRow;
  // The pay and delivery paths run these on every order.
  private readonly byId;
  private readonly paidIf;
  private readonly deliveredIf;

  constructor(database: StoreDatabase) {
    super(database);
    const db = database.db;
    this.byReference = prepare(db, (d) => d.selectFrom('orders').selectAll().where('game_id', '=', '').where('reference_id', '=', ''));
    const sample = Object.fromEntries(ORDER_COLUMNS.map((c) => [c, null])) as unknown as OrderRow;
    this.insertRowUnlessReferenced = prepare(db, (d) => d.insertInto('orders').values(sample).onConflict((oc) => oc.columns(['game_id', 'reference_id']).doNothing()));
    const event = Object.fromEntries(EVENT_COLUMNS.map((c) => [c, null])) as unknown as OrderEventRow;
    this.insertEventRow = prepare(db, (d) => d.insertInto('order_events').values(event));
    this.byId = prepare(db, (d) => d.selectFrom('orders').selectAll().where('order_id', '=', ''));
    this.paidIf = prepareNamed(db, ['orderId', 'status', 'paidAt', 'sandbox', 'late'], (d, p) =>
      d
        .updateTable('orders')
        .set({ status: 'paid', paid_at: p.paidAt, is_sandbox: p.sandbox, late_payment: p.late, updated_at: p.paidAt })
        .where('order_id', '=', p.orderId)
        .where('status', '=', p.status)
        .returningAll(),
    );
    this.deliveredIf = prepareNamed(db, ['orderId', 'now'], (d, p) =>
      d.updateTable('orders').set({ status: 'delivered', delivered_at: p.now, updated_at: p.now }).where('order_id', '=', p.orderId).where('status', '=', 'paid'),
    );
  }

  /** Whether createAtOnce can be used (PostgreSQL; SQLite's group commit is cheaper already). */
  get createsAtOnce(): boolean {
    return this.postgres;
  }

  /**
   * A new order, committed in one statement; false, with nothing written, when the reference_id
   * exists or the player is one the guard checks.
   */
  async createAtOnce(row: OrderRow): Promise<boolean> {
    // json_populate_record takes the columns it names from the row's JSON.
    const r = await this.db.executeQuery(CompiledQuery.raw(CREATE_AT_ONCE, [JSON.stringify(row), row.game_id, row.combo_id]));
    return r.rows.length > 0;
  }

  async findByReference(q: Q, gameId: string, referenceId: string): Promise<OrderRow | undefined> {
    return (await this.byReference(q, [gameId, referenceId])).rows[0] as OrderRow | undefined;
  }

  async findById(q: Q, orderId: string): Promise<OrderRow | undefined> {
    return (await this.byId(q, [orderId])).rows[0] as OrderRow | undefined;
  }

  /** The game of each of `orderIds` that exists (order id -> game id), looked up in chunks. */
  async gamesOf(q: Q, orderIds: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (let i = 0; i < orderIds.length; i += 500) {
      const rows = await q.selectFrom('orders').select(['order_id', 'game_id']).where('order_id', 'in', orderIds.slice(i, i + 500)).execute();
      for (const r of rows) out.set(r.order_id, r.game_id);
    }
    return out;
  }

  /** Inserts an order whose reference_id is new to its game; throws when it is not. */
  async insert(q: Q, row: OrderRow): Promise<void> {
    if (!(await this.insertUnlessReferenced(q, row))) throw new Error(`order ${row.reference_id} of game ${row.game_id} exists already`);
  }

  /**
   * Inserts the order unless its game has an order under its reference_id already: whether it
   * was written. A new order thus costs no read of the reference first; a taken order id still
   * throws (a unique violation, as insert).
   */
  async insertUnlessReferenced(q: Q, row: OrderRow): Promise<boolean> {
    return (await this.insertRowUnlessReferenced(q, orderParams(row))).numAffectedRows === 1n;
  }

  /**
   * The guarded update of every state change: applies only while the order is still in
   * `status`, and returns the updated row, or undefined when another writer got there first.
   */
  updateIfStatus(q: Q, orderId: string, status: OrderStatus, patch: Updateable<OrdersTable>): Promise<OrderRow | undefined> {
    return q
      .updateTable('orders')
      .set(patch)
      .where('order_id', '=', orderId)
      .where('status', '=', status)
      .returningAll()
      .executeTakeFirst();
  }

  /** updateIfStatus for `paid`, the one transition every payment makes (prepared). */
  async updateToPaidIf(q: Q, orderId: string, status: OrderStatus, p: { paidAt: number; sandbox: 0 | 1; late: 0 | 1 }): Promise<OrderRow | undefined> {
    return (await this.paidIf(q, { orderId, status, ...p })).rows[0] as OrderRow | undefined;
  }

  /** `paid` -> `delivered`, guarded on `paid`; whether it applied. */
  async updateToDeliveredIfPaid(q: Q, orderId: string, now: number): Promise<boolean> {
    return Number((await this.deliveredIf(q, { orderId, now })).numAffectedRows ?? 0) === 1;
  }

  async insertEvent(q: Q, row: OrderEventRow): Promise<void> {
    await this.insertEventRow(q, eventParams(row));
  }

  /** Ids of `created` orders whose expiry has passed, oldest expiry first. */
  async findExpiredIds(q: Q, now: number, limit: number): Promise<string[]> {
    const rows = await q
      .selectFrom('orders')
      .select('order_id')
      .where('status', '=', 'created')
      .where('expires_at', '<=', now)
      .orderBy('expires_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.order_id);
  }
}

/** True when a database error is a unique-constraint violation (SQLite or PostgreSQL). */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: string })?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
