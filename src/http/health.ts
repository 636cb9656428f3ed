import { Type } from 'typebox';
import { responses } from './errors-schema.js';
import type { ApiApp } from './route-info.js';

export interface Readiness {
  /** Throws when the database is unreachable or migrations are pending. */
  check(): Promise<void>;
}

export function registerHealthRoutes(app: ApiApp, readiness: Readiness): void {
  const Status = Type.Object({ status: Type.String() });
  app.get('/healthz', {
    schema: { tags: ['ops'], summary: 'The process is alive', response: responses({ 200: Status }, []) },
    handler: async () => ({ status: 'ok' }),
  });
  app.get('/readyz', {
    schema: { tags: ['ops'], summary: 'The database is reachable and migrated', response: responses({ 200: Status }, []) },
    handler: async () => {
      await readiness.check();
      return { status: 'ready' };
    },
  });
}
