import type { FastifyInstance, RouteOptions } from 'fastify';
import type { AuthKind } from '../lib/auth-kind.js';

/** One registered route as the API documents it. */
export interface RouteEntry {
  method: string;
  url: string;
  auth: AuthKind;
  schema: Record<string, unknown> | undefined;
}

const tables = new WeakMap<FastifyInstance, RouteEntry[]>();

/**
 * Records every route the app registers (HEAD routes Fastify adds for GETs left out), so the
 * API document can be checked against what the service really serves. Call before any route.
 */
export function trackRoutes(app: FastifyInstance): void {
  const table: RouteEntry[] = [];
  tables.set(app, table);
  app.addHook('onRoute', (r: RouteOptions) => {
    for (const method of [r.method].flat()) {
      if (method === 'HEAD') continue;
      table.push({
        method,
        url: r.url,
        auth: (r.config as { auth?: AuthKind } | undefined)?.auth ?? 'none',
        schema: r.schema as Record<string, unknown> | undefined,
      });
    }
  });
}

/** The routes registered so far (empty when `trackRoutes` was not called). */
export function listRoutes(app: FastifyInstance): readonly RouteEntry[] {
  return tables.get(app) ?? [];
}
