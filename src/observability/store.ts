import { sql } from 'kysely';
import type { StoreDatabase } from '../db/database.js';
import { DatabaseStore } from '../db/database-store.js';
import { UNDELIVERED_SQL } from './undelivered.js';
import { SqliteStatusCounter, type GameStatusCount, type StatusCount } from './count-worker.js';


export interface BacklogCounts {
  ordersByStatus: { status: string; n: number }[];
  notificationsPending: number;
  /** Notifications not delivered (pending, failing or failed), per game and status. */
  undeliveredByGame: GameStatusCount[];
  nppaEventsPending: number;
}

/**
 * The database-derived gauges, read on each scrape. Each query is one grouped count over an
 * index whose first column is `status` (orders_status_expires, notifications_due,
 * nppa_events_due). The orders count reads every order: on an SQLite file the counts run on a
 * thread of its own (count-worker.ts), so a scrape never stops the requests nor waits for the
 * write connection.
 */
export class ObservabilityStore extends DatabaseStore {
  private readonly counter: SqliteStatusCounter | null;

  constructor(database: StoreDatabase) {
    super(database);
    this.counter = database.sqliteFile ? new SqliteStatusCounter(database.sqliteFile) : null;
  }

  async close(): Promise<void> {
    await this.counter?.close();
  }

  private ordersByStatus(): Promise<StatusCount[]> {
    if (this.counter) return this.counter.count();
    return this.db
      .selectFrom('orders')
      .select((eb) => ['status', eb.fn.countAll<number | string>().as('n')])
      .groupBy('status')
      .execute()
      .then((rows) => rows.map((r) => ({ status: r.status, n: Number(r.n) })));
  }

  /** Over notifications_due (status first): reads the undelivered rows only. */
  private undeliveredByGame(): Promise<GameStatusCount[]> {
    if (this.counter) return this.counter.undelivered();
    return sql<{ game_id: string; status: string; n: number | string }>`${sql.raw(UNDELIVERED_SQL)}`
      .execute(this.db)
      .then(({ rows }) => rows.map((r) => ({ game_id: r.game_id, status: r.status, n: Number(r.n) })));
  }

  /** Pending notifications and national-upload events. */
  private async pending(): Promise<{ notifications: number; nppaEvents: number }> {
    if (this.counter) {
      const rows = await this.counter.pending();
      const of = (table: string) => Number(rows.find((r) => r.table === table)?.n ?? 0);
      return { notifications: of('notifications'), nppaEvents: of('nppa_events') };
    }
    const count = (table: 'notifications' | 'nppa_events') =>
      this.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow()
        .then((r) => Number(r.n));
    const [notifications, nppaEvents] = await Promise.all([count('notifications'), count('nppa_events')]);
    return { notifications, nppaEvents };
  }

  async backlog(): Promise<BacklogCounts> {
    const [orders, undelivered, pending] = await Promise.all([this.ordersByStatus(), this.undeliveredByGame(), this.pending()]);
    return {
      ordersByStatus: orders,
      notificationsPending: pending.notifications,
      undeliveredByGame: undelivered,
      nppaEventsPending: pending.nppaEvents,
    };
  }
}
