import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { Errors } from '../errors.js';
import { responses } from '../http/errors-schema.js';
import { routeOf } from '../http/route-info.js';
import type { Logger } from 'pino';
import type { ServiceMetrics } from './metrics.js';
import { originForm } from '../http/request-target.js';
import { lateBodyTraceId } from '../http/load-shedding.js';
import type { ApiApp } from '../http/route-info.js';

/** Label and log value for requests that matched no route (never the raw path: it may hold a token). */
export const UNMATCHED_ROUTE = '(unmatched)';

/**
 * One log line and one metrics sample per answered request. The line carries method, route
 * pattern, status, latency and trace id, and deliberately nothing else: no headers, no query
 * string, no body (they hold signatures, tokens and secrets).
 */
export function installRequestObservability(app: ApiApp, metrics: ServiceMetrics): void {
  app.addHook('onResponse', (req, reply, done) => {
    const route = routeOf(req).url ?? UNMATCHED_ROUTE;
    const elapsed = reply.elapsedTime;
    metrics.observeRequest(req.method, route, reply.statusCode, elapsed / 1000);
    // The line is built only when it will be written (request logs are off below info).
    if ((req.log as unknown as Logger).isLevelEnabled('info')) {
      // A 408 for a body that did not arrive carried a trace id of its own (load-shedding.ts).
      const traceId = lateBodyTraceId(reply.raw) ?? req.id;
      req.log.info({ method: req.method, route, status: reply.statusCode, latencyMs: Math.round(elapsed * 100) / 100, traceId }, 'request');
    }
    done();
  });
}

/** GET /metrics (Prometheus text format); with METRICS_TOKEN set, only with that bearer token. */
export function registerMetricsRoute(app: ApiApp, metrics: ServiceMetrics, authenticate: ((req: FastifyRequest) => void | Promise<void>) | null): void {
  app.get('/metrics', {
    schema: {
      tags: ['ops'],
      summary: 'Prometheus metrics (Bearer METRICS_TOKEN when configured)',
      response: responses(
        { 200: { description: 'Prometheus text exposition format', content: { 'text/plain; version=0.0.4; charset=utf-8': { schema: Type.String() } } } },
        [Errors.unauthorized, Errors.rateLimited],
      ),
    },
    handler: async (req, reply) => {
      // Only as spelled: a proxy that keeps /metrics off the internet by its raw path (as
      // deploy/haproxy.cfg and deploy/Caddyfile do) must not be passed by /%6Detrics, which the
      // router decodes to this route.
      const rawPath = originForm(req.url).split('?')[0] as string;
      if (rawPath !== '/metrics') throw Errors.notFound(`no endpoint at ${rawPath}`);
      // METRICS_TOKEN, with the operator API's limit on guessing (http/bearer-guard.ts).
      if (authenticate) await authenticate(req);
      const text = await metrics.render();
      return reply.type(metrics.contentType).send(text);
    },
  });
}
