import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { createFastify } from '../http/app.js';
import type { AppHooks } from '../http/check-order.js';
import { clientAddressOf } from '../http/client-address.js';
import { LoadShedder } from '../http/load-shedding.js';
import type { Refusal } from '../http/refusals.js';
import type { ApiApp } from '../http/route-info.js';
import type { Clock } from '../lib/clock.js';
import type { ServiceMetrics } from '../observability/metrics.js';

export interface ServerOptions {
  config: Config;
  logger: Logger;
  clock: Clock;
  metrics: ServiceMetrics;
  hooks: AppHooks;
}

/** The Fastify instance with this configuration's load shedding, refusal logs and metrics. */
export function createServer(o: ServerOptions): { app: ApiApp; shedding: LoadShedder } {
  const { config, logger, metrics } = o;
  const shedding = new LoadShedder({
    maxInflight: config.maxInflightRequests,
    latencyTargetMs: config.admissionLatencyTargetMs,
    maxEventLoopDelayMs: config.maxEventLoopDelayMs || Number.POSITIVE_INFINITY,
    onShed: () => metrics.shed(),
    logger,
    bodyTimeoutMs: config.bodyTimeoutMs,
    maxInflightPerClient: Math.floor((config.maxInflightRequests * config.maxInflightPerClientPercent) / 100),
    clientOf: clientAddressOf(config.trustProxy),
  });
  metrics.watchAdmission({ limit: () => shedding.currentLimit, inProgress: () => shedding.inProgress });
  const app = createFastify({
    logger,
    clock: o.clock,
    // The request log's line for a request that never reached it (refusals.ts).
    onRefused: (r: Refusal) => {
      metrics.refusedBeforeRouting(r.reason, r.status);
      if (logger.isLevelEnabled('info')) logger.info({ status: r.status, reason: r.reason, traceId: r.traceId }, 'request refused before routing');
    },
    tls: config.tls,
    trustProxy: config.trustProxy,
    shedder: shedding,
    hooks: o.hooks,
  });
  return { app, shedding };
}
