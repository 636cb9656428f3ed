import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, PaymentsTable } from '../db/schema.js';
import { prepareNamed } from '../db/prepared.js';
import type { StoreDatabase } from '../db/database.js';
import { DatabaseStore } from '../db/database-store.js';

export type PaymentRow = Selectable<PaymentsTable>;
type Q = Kysely<DB> | Transaction<DB>;

const COLUMNS = [
  'payment_id', 'order_id', 'game_id', 'provider', 'provider_txn_id', 'amount', 'currency', 'status', 'late', 'detail', 'created_at',
  'environment', 'store_amount', 'store_currency', 'reason',
] as const satisfies readonly (keyof PaymentRow)[];

/**
 * Queries for payments: one row per provider transaction and order, unique (provider,
 * provider_txn_id, order_id); at most one accepted row per (provider, provider_txn_id).
 */
export class PaymentStore extends DatabaseStore {
  // Every payment runs both (see db/prepared.ts).
  private readonly byTxn;
  private readonly insertRow;

  constructor(database: StoreDatabase) {
    super(database);
    const db = database.db;
    this.byTxn = prepareNamed(db, ['provider', 'txnId'], (d, p) =>
      d.selectFrom('payments').selectAll().where('provider', '=', p.provider).where('provider_txn_id', '=', p.txnId),
    );
    this.insertRow = prepareNamed(db, COLUMNS, (d, p) => d.insertInto('payments').values(p));
  }

  /** Every payment recorded for a provider transaction, oldest first. */
  async findByTxn(q: Q, provider: string, txnId: string): Promise<PaymentRow[]> {
    // A handful of rows at most (one per order the transaction claimed): sorted here, so the
    // read is the unique index's range alone.
    const rows = (await this.byTxn(q, { provider, txnId })).rows as PaymentRow[];
    return rows.length < 2 ? rows : rows.sort((a, b) => a.created_at - b.created_at || (a.payment_id < b.payment_id ? -1 : a.payment_id > b.payment_id ? 1 : 0));
  }

  findAccepted(q: Q, provider: string, txnId: string): Promise<PaymentRow | undefined> {
    return q
      .selectFrom('payments')
      .selectAll()
      .where('provider', '=', provider)
      .where('provider_txn_id', '=', txnId)
      .where('status', '=', 'accepted')
      .executeTakeFirst();
  }

  /** The payment that paid an order. */
  acceptedOf(q: Q, orderId: string): Promise<PaymentRow | undefined> {
    return q.selectFrom('payments').selectAll().where('order_id', '=', orderId).where('status', '=', 'accepted').executeTakeFirst();
  }

  async insert(q: Q, row: PaymentRow): Promise<void> {
    await this.insertRow(q, row);
  }

  /** Payments newest first, after the keyset `after` (operator listing). */
  list(
    filter: { status?: 'accepted' | 'flagged'; gameId?: string; provider?: string; orderId?: string },
    after: { createdAt: number; paymentId: string } | null,
    limit: number,
  ): Promise<PaymentRow[]> {
    let q = this.db.selectFrom('payments').selectAll().orderBy('created_at', 'desc').orderBy('payment_id', 'desc').limit(limit);
    if (filter.status) q = q.where('status', '=', filter.status);
    if (filter.gameId) q = q.where('game_id', '=', filter.gameId);
    if (filter.provider) q = q.where('provider', '=', filter.provider);
    if (filter.orderId) q = q.where('order_id', '=', filter.orderId);
    if (after) {
      const a = after;
      q = q.where((eb) => eb.or([eb('created_at', '<', a.createdAt), eb.and([eb('created_at', '=', a.createdAt), eb('payment_id', '<', a.paymentId)])]));
    }
    return q.execute();
  }

  /** A product's store ids (payments.md 2), read in the payment's transaction. */
  async storeProductIds(q: Q, gameId: string, productId: string): Promise<Record<string, string> | null> {
    const r = await q.selectFrom('products').select('store_product_ids').where('game_id', '=', gameId).where('product_id', '=', productId).executeTakeFirst();
    return r?.store_product_ids ? (JSON.parse(r.store_product_ids) as Record<string, string>) : null;
  }
}
