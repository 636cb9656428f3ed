import type { Kysely, Selectable, Transaction } from 'kysely';
import type { TransactionRunner } from '../db/group-commit.js';
import type { DB, PaymentsTable } from '../db/schema.js';

export type PaymentRow = Selectable<PaymentsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for payments: one row per provider transaction, unique (provider, provider_txn_id). */
export class PaymentStore {
  constructor(
    readonly db: Kysely<DB>,
    private readonly tx: TransactionRunner = (fn) => db.transaction().execute(fn),
  ) {}

  /** A transaction that has committed when the promise settles (group commit on SQLite). */
  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return this.tx(fn);
  }

  findByTxn(q: Q, provider: string, txnId: string): Promise<PaymentRow | undefined> {
    return q.selectFrom('payments').selectAll().where('provider', '=', provider).where('provider_txn_id', '=', txnId).executeTakeFirst();
  }

  async insert(q: Q, row: PaymentRow): Promise<void> {
    await q.insertInto('payments').values(row).execute();
  }
}
