import type { ShownStatus } from '../notifications/schemas.js';

/**
 * The notification statuses of one not delivered, as the admin API shows them: `failing` is a
 * stored `pending` one with attempts (notifications/schemas.ts).
 */
export const UNDELIVERED: readonly ShownStatus[] = ['pending', 'failing', 'failed'];

/**
 * Undelivered notifications per game and shown status, over notifications_due (status first).
 * The same statement on both databases and on the count worker's thread (status-counter-worker.ts).
 */
export const UNDELIVERED_SQL =
  "select game_id, case when status = 'pending' and attempts > 0 then 'failing' else status end as status, count(*) as n " +
  "from notifications where status in ('pending', 'failed') group by game_id, 2";
