import type http from 'node:http';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Handler } from './dual-server.js';
import { newTraceId } from './trace.js';

export interface LoadSheddingOptions {
  /** Requests in progress beyond this are refused at once (503). */
  maxInflight: number;
  /** When the event loop's p99 delay over the last second exceeds this, new requests get 503. */
  maxEventLoopDelayMs: number;
  /** Called once per refused request (metrics). */
  onShed?: () => void;
  /** 503 floods are logged here once a second, not per request. */
  logger?: Logger;
}

const BODY = Buffer.from(JSON.stringify({ error: 'service_unavailable', message: 'the service is over capacity; retry shortly' }));
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Overload protection: past capacity the service sheds new requests with 503
 * `service_unavailable` and `Retry-After: 1` rather than queueing them without end (memory and
 * latency would grow with the backlog). Two signals: requests in progress (a hard bound on the
 * work held in memory, and with it on the latency of what is admitted) and event-loop delay (the
 * process is saturated: what is admitted would wait anyway). Health and metrics endpoints are
 * exempt.
 *
 * The check runs in the Node request handler, before Fastify sees the request: a refusal costs
 * the HTTP parse and one preformatted write (an ErrorResponse with `x-trace-id`, like every
 * answer), a fraction of an admitted request. Refusing through Fastify (routing, hooks, error
 * handler) cost ~40 µs of CPU, so at 5x the sustainable rate the refusals alone saturated the
 * process and everything, admitted or not, queued for seconds (docs/benchmarks.md).
 */
export class LoadShedder {
  private inflight = 0;
  private saturated = false;
  private readonly delay: IntervalHistogram;
  private readonly timer: NodeJS.Timeout;
  private shedSinceLog = 0;
  private readonly release = () => {
    this.inflight--;
  };

  constructor(private readonly o: LoadSheddingOptions) {
    this.delay = monitorEventLoopDelay({ resolution: 10 });
    this.delay.enable();
    this.timer = setInterval(() => {
      this.saturated = this.delay.percentile(99) / 1e6 > o.maxEventLoopDelayMs;
      this.delay.reset();
      if (this.shedSinceLog > 0) {
        o.logger?.warn({ shed: this.shedSinceLog, inflight: this.inflight, eventLoopSaturated: this.saturated }, 'service unavailable: requests shed (over capacity)');
        this.shedSinceLog = 0;
      }
    }, 1000);
    this.timer.unref();
  }

  /** Requests admitted and not yet answered. */
  get inProgress(): number {
    return this.inflight;
  }

  /** The Node request handler `handler`, behind the admission check. */
  wrap(handler: Handler): Handler {
    return (req, res) => {
      if (this.admit(req, res)) handler(req, res);
    };
  }

  private admit(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    if (EXEMPT.has(q < 0 ? url : url.slice(0, q))) return true;
    if (this.inflight >= this.o.maxInflight || this.saturated) {
      this.shedSinceLog++;
      this.o.onShed?.();
      // Answered before the body is read; Node discards the rest of the body and keeps the
      // connection for the next request.
      res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1', 'x-trace-id': newTraceId(), 'content-length': BODY.length });
      res.end(BODY);
      return false;
    }
    this.inflight++;
    res.once('close', this.release);
    return true;
  }

  close(): void {
    clearInterval(this.timer);
    this.delay.disable();
  }
}
