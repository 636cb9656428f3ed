import type { Kysely, Selectable } from 'kysely';
import { recordAudit, type Actor } from '../../admin/audit.js';
import type { DB, ReconciliationsTable } from '../../db/schema.js';
import { Errors } from '../../errors.js';
import { BEIJING_OFFSET_MS } from '../../lib/beijing-time.js';
import type { Clock } from '../../lib/clock.js';
import { prefixedId, type IdGenerator } from '../../lib/ids.js';
import type { OrderStore } from '../../orders/store.js';
import type { ChannelService } from '../channel-service.js';
import type { StatementEntry } from '../provider.js';
import type { PaymentService } from '../service.js';
import type { ProviderPayments } from '../provider-payments/service.js';

export type ReconciliationRow = Selectable<ReconciliationsTable>;

export interface ReconciliationDeps {
  db: Kysely<DB>;
  payments: PaymentService;
  providerPayments: ProviderPayments;
  channels: ChannelService;
  orders: OrderStore;
  clock: Clock;
  ids: IdGenerator;
}

/** One difference between the provider's statement and the stored payments. */
export interface Difference {
  /**
   * `missing_payment`: money received that no payment recorded (applied now, as a late
   * callback); `not_in_statement`: a payment of the day the provider does not list;
   * `amount_differs`: both have it, with other amounts.
   */
  kind: 'missing_payment' | 'not_in_statement' | 'amount_differs';
  provider_txn_id: string;
  order_id: string;
  statement_amount?: number;
  recorded_amount?: number;
  /** missing_payment: what applying it did (accepted, or flagged and why). */
  applied?: string;
}

const DAY_MS = 86_400_000;

/**
 * Reconciliation (payments.md 6): the provider's statement of one day (its day: Beijing time)
 * against the stored payments of that channel and game. Every run is stored, with its
 * differences, whether they were found or it failed.
 */
export class ReconciliationService {
  constructor(private readonly d: ReconciliationDeps) {}

  async run(channel: string, gameId: string, date: string, by: Actor): Promise<ReconciliationRow> {
    const { db, payments, providerPayments, channels, clock, ids } = this.d;
    const gateway = providerPayments.gatewayOf(channel);
    if (!gateway?.gateway.statement) throw Errors.invalidRequest(`channel ${channel} has no statement to reconcile (wechat, alipay)`);
    const settings = (await channels.forGame(gameId)).get(channel);
    if (!settings) throw Errors.notFound(`game ${gameId} has no ${channel} channel`);
    const start = Date.parse(`${date}T00:00:00Z`) - BEIJING_OFFSET_MS;
    if (!Number.isFinite(start) || start + DAY_MS > clock.now()) throw Errors.invalidRequest(`date ${date} is not a past day (Beijing time)`);
    const row: ReconciliationRow = { reconciliation_id: prefixedId('rec', ids), channel, game_id: gameId, date, status: 'failed', counts: null, differences: null, error: null, actor: by.actor, created_at: clock.now() };
    try {
      const statement = await this.ofGame(gameId, await gateway.gateway.statement(settings, date));
      const differences: Difference[] = [];
      const listed = new Set<string>();
      for (const e of statement) {
        listed.add(e.provider_txn_id);
        const recorded = await payments.findAcceptedTxn(channel, e.provider_txn_id);
        if (!recorded) {
          const outcome = await providerPayments.applyPaid(channel, { provider_txn_id: e.provider_txn_id, order_id: e.order_id, amount: e.amount, currency: e.currency });
          differences.push({ kind: 'missing_payment', provider_txn_id: e.provider_txn_id, order_id: e.order_id, statement_amount: e.amount, applied: outcome.status === 'accepted' ? 'accepted' : `flagged (${outcome.reason ?? ''})` });
        } else if (recorded.amount !== e.amount || recorded.currency !== e.currency) {
          differences.push({ kind: 'amount_differs', provider_txn_id: e.provider_txn_id, order_id: e.order_id, statement_amount: e.amount, recorded_amount: recorded.amount });
        }
      }
      const ours = await payments.acceptedBetween(channel, gameId, start, start + DAY_MS);
      for (const p of ours) {
        if (!listed.has(p.provider_txn_id)) differences.push({ kind: 'not_in_statement', provider_txn_id: p.provider_txn_id, order_id: p.order_id, recorded_amount: p.amount });
      }
      row.status = differences.length ? 'differences' : 'matched';
      row.counts = JSON.stringify({ statement: statement.length, recorded: ours.length, differences: differences.length });
      row.differences = JSON.stringify(differences);
    } catch (e) {
      if (e instanceof Error && 'status' in e && (e as { status: number }).status < 500) throw e;
      row.error = (e as Error).message;
    }
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('reconciliations').values(row).execute();
      await recordAudit(trx, ids, row.created_at, { by, game: gameId, action: 'reconciliation.run', target: `${gameId}/${channel}/${date}`, detail: { status: row.status } });
    });
    return row;
  }

  /**
   * The entries of a statement that are this game's: a merchant account may serve several
   * games (and other systems), and its statement lists them all. An order of another game is
   * left to that game's reconciliation; an order unknown here stays (applied, it is flagged).
   */
  private async ofGame(gameId: string, statement: StatementEntry[]): Promise<StatementEntry[]> {
    const { orders } = this.d;
    const games = await orders.gamesOf(orders.db, [...new Set(statement.map((e) => e.order_id))]);
    return statement.filter((e) => (games.get(e.order_id) ?? gameId) === gameId);
  }

  /** Newest first. */
  list(filter: { game_id?: string; channel?: string; limit: number }): Promise<ReconciliationRow[]> {
    let q = this.d.db.selectFrom('reconciliations').selectAll();
    if (filter.game_id) q = q.where('game_id', '=', filter.game_id);
    if (filter.channel) q = q.where('channel', '=', filter.channel);
    return q.orderBy('created_at', 'desc').orderBy('reconciliation_id', 'desc').limit(filter.limit).execute();
  }
}

export function toView(r: ReconciliationRow) {
  return {
    reconciliation_id: r.reconciliation_id,
    channel: r.channel,
    game_id: r.game_id,
    date: r.date,
    status: r.status,
    counts: r.counts ? (JSON.parse(r.counts) as { statement: number; recorded: number; differences: number }) : null,
    differences: r.differences ? (JSON.parse(r.differences) as Difference[]) : [],
    error: r.error,
    actor: r.actor,
    created_at: r.created_at,
  };
}
