import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import { Errors } from '../errors.js';

export interface LoadSheddingOptions {
  /** Requests in progress beyond this are refused at once (503). */
  maxInflight: number;
  /** When the event loop's p99 delay over the last second exceeds this, new requests get 503. */
  maxEventLoopDelayMs: number;
}

/**
 * Overload protection: past capacity the service sheds new requests with 503
 * `service_unavailable` and `Retry-After: 1` before reading their bodies, rather than queueing
 * them without end (memory and latency would grow with the backlog). Two signals: requests in
 * progress (a hard bound on the work held in memory) and event-loop delay (the process is
 * saturated: what is admitted would wait anyway). Health and metrics endpoints are exempt.
 */
export function installLoadShedding(app: FastifyInstance, o: LoadSheddingOptions): { close(): void } {
  let inflight = 0;
  let saturated = false;
  const delay: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const timer = setInterval(() => {
    saturated = delay.percentile(99) / 1e6 > o.maxEventLoopDelayMs;
    delay.reset();
  }, 1000);
  timer.unref();

  // Callback-style hooks: nothing here is awaited, and an async hook costs a promise per request.
  app.addHook('onRequest', (req, _reply, next) => {
    const url = req.routeOptions.url;
    if (url === '/healthz' || url === '/readyz' || url === '/metrics') return next();
    if (inflight >= o.maxInflight || saturated) {
      return next(Errors.serviceUnavailable('the service is over capacity; retry shortly', { 'retry-after': '1' }));
    }
    inflight++;
    (req as { shedCounted?: boolean }).shedCounted = true;
    next();
  });
  const release = (req: object) => {
    if ((req as { shedCounted?: boolean }).shedCounted) {
      (req as { shedCounted?: boolean }).shedCounted = false;
      inflight--;
    }
  };
  app.addHook('onResponse', (req, _reply, next) => {
    release(req);
    next();
  });
  app.addHook('onRequestAbort', (req, next) => {
    release(req);
    next();
  });
  return {
    close() {
      clearInterval(timer);
      delay.disable();
    },
  };
}
