import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';

export interface BacklogCounts {
  ordersByStatus: { status: string; n: number }[];
  notificationsPending: number;
  nppaEventsPending: number;
}

/**
 * The database-derived gauges, read on each scrape. Each query is one grouped count over an
 * index whose first column is `status` (orders_status_expires, notifications_due,
 * nppa_events_due).
 */
export class ObservabilityStore {
  constructor(private readonly db: Kysely<DB>) {}

  async backlog(): Promise<BacklogCounts> {
    const [orders, notifications, nppa] = await Promise.all([
      this.db
        .selectFrom('orders')
        .select((eb) => ['status', eb.fn.countAll<number | string>().as('n')])
        .groupBy('status')
        .execute(),
      this.db
        .selectFrom('notifications')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow(),
      this.db
        .selectFrom('nppa_events')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow(),
    ]);
    return {
      ordersByStatus: orders.map((r) => ({ status: r.status, n: Number(r.n) })),
      notificationsPending: Number(notifications.n),
      nppaEventsPending: Number(nppa.n),
    };
  }
}
