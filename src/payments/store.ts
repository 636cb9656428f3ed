import type { Kysely, Selectable, Transaction } from 'kysely';
import type { TransactionRunner } from '../db/group-commit.js';
import type { DB, PaymentsTable } from '../db/schema.js';
import { prepareNamed } from '../db/prepared.js';

export type PaymentRow = Selectable<PaymentsTable>;
type Q = Kysely<DB> | Transaction<DB>;

const COLUMNS = ['payment_id', 'order_id', 'provider', 'provider_txn_id', 'amount', 'currency', 'status', 'late', 'detail', 'created_at'] as const satisfies readonly (keyof PaymentRow)[];

/** Queries for payments: one row per provider transaction, unique (provider, provider_txn_id). */
export class PaymentStore {
  // Every payment runs both (see db/prepared.ts).
  private readonly byTxn;
  private readonly insertRow;

  constructor(
    readonly db: Kysely<DB>,
    private readonly tx: TransactionRunner = (fn) => db.transaction().execute(fn),
  ) {
    this.byTxn = prepareNamed(db, ['provider', 'txnId'], (d, p) =>
      d.selectFrom('payments').selectAll().where('provider', '=', p.provider).where('provider_txn_id', '=', p.txnId),
    );
    this.insertRow = prepareNamed(db, COLUMNS, (d, p) => d.insertInto('payments').values(p));
  }

  /** A transaction that has committed when the promise settles (group commit on SQLite). */
  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return this.tx(fn);
  }

  async findByTxn(q: Q, provider: string, txnId: string): Promise<PaymentRow | undefined> {
    return (await this.byTxn(q, { provider, txnId })).rows[0] as PaymentRow | undefined;
  }

  async insert(q: Q, row: PaymentRow): Promise<void> {
    await this.insertRow(q, row);
  }
}
