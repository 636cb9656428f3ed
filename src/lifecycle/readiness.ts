import { migrationsApplied, type Database } from '../db/index.js';
import { Errors, isApiError } from '../errors.js';
import type { Readiness } from '../http/health.js';

/** How long the database may take to answer /readyz. */
const READY_TIMEOUT_MS = 2000;
/** How often whether the database is migrated is read again. */
const READY_RECHECK_MS = 5000;

/**
 * /readyz: 503 while the database is unreachable or slow to answer, while its migrations are
 * pending, and while the service is leaving (shutdown.ts).
 */
export function createReadiness(database: Database, isLeaving: () => boolean): Readiness {
  // Whether the database is migrated is read again every few seconds, not once: a database
  // replaced by an empty one (restored, recreated) must take the instance out.
  let migrated = false;
  let migratedAt = 0;
  const databaseReady = async (): Promise<void> => {
    await database.ping();
    if (!migrated || Date.now() - migratedAt > READY_RECHECK_MS) {
      migrated = await migrationsApplied(database.db);
      migratedAt = Date.now();
    }
  };
  return {
    check: async () => {
      // A database that takes connections but never answers must not hang the check (a
      // balancer's check would time out instead of seeing 503).
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), READY_TIMEOUT_MS)));
      try {
        if ((await Promise.race([databaseReady(), late])) === 'late') throw Errors.serviceUnavailable(`the database did not answer within ${READY_TIMEOUT_MS} ms`);
      } catch (e) {
        if (isApiError(e)) throw e;
        throw Errors.serviceUnavailable('database is unreachable');
      } finally {
        clearTimeout(timer);
      }
      if (!migrated) throw Errors.serviceUnavailable('database migrations are pending');
      if (isLeaving()) throw Errors.serviceUnavailable('the service is shutting down');
    },
  };
}
