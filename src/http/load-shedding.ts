import http from 'node:http';
import http2 from 'node:http2';
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { Handler } from './dual-server.js';
import { newTraceId } from './trace.js';
import { originForm } from './request-target.js';
import { AdaptiveLimit } from './adaptive-limit.js';
import { bodyMayFollow } from './body-presence.js';
import { Errors } from '../errors.js';
import { prepareError, writePreparedError, type PreparedError } from './error-response.js';

export interface LoadSheddingOptions {
  /** Requests in progress beyond this are refused at once (503). */
  maxInflight: number;
  /**
   * Adapt the in-progress limit below `maxInflight` so that admitted requests finish within
   * this many ms while the process is saturated (adaptive-limit.ts); 0 keeps the limit fixed.
   */
  latencyTargetMs: number;
  /** When the event loop was held longer than this in the last second, new requests get 503. */
  maxEventLoopDelayMs: number;
  /** Called once per refused request (metrics). */
  onShed?: () => void;
  /** 503 floods are logged here once a second, not per request. */
  logger?: Logger;
  /**
   * An admitted request whose body has not fully arrived this many ms after its headers is
   * answered 408 and its connection (HTTP/2: its stream) closed, which frees its place: a client
   * sending bodies slowly must not hold the in-progress limit. 0: no deadline.
   */
  bodyTimeoutMs?: number;
  /**
   * How many requests one client may have in progress (MAX_INFLIGHT_PER_CLIENT_PERCENT of
   * maxInflight); beyond it its new requests get 503 while other clients are still admitted.
   * Unset or at least maxInflight: no bound of its own.
   */
  maxInflightPerClient?: number;
  /** The client a request is counted for (its address, honouring TRUST_PROXY). */
  clientOf?: (req: http.IncomingMessage) => string;
}

/** How often the adaptive limit is adjusted (ms). */
const WINDOW_MS = 100;
/** Sampling interval of the event-loop delay (ms); finer with the adaptive limit, for its window. */
const DELAY_RESOLUTION_MS = 10;
const WINDOW_DELAY_RESOLUTION_MS = 5;
/** The delay readings: the one-second saturation check, and the adaptive window. */
const SECOND = 0;
const WINDOW = 1;
/** Event-loop utilization from which a window counts as saturated. */
const SATURATED_ELU = 0.9;
const ADMITTED_AT = Symbol('admittedAt');
/** An admitted response's release, until it has run (then null). */
const RELEASE = Symbol('release');
/** The client an admitted response is counted for, with a per-client bound. */
const CLIENT = Symbol('client');
type Timed = http.ServerResponse & { [ADMITTED_AT]?: number; [RELEASE]?: ((this: Timed) => void) | null; [CLIENT]?: string };

let answerReleases = false;
/**
 * A request stops counting as in progress when it is answered (its head written, or its answer
 * ended), not when the answer has left: an HTTP/2 client that opens no flow-control window (a
 * large answer is written in chunks, each waiting for the window), or an HTTP/1.1 answer queued
 * behind a connection that then closed, would otherwise hold its place for as long as its
 * connection lives, and 256 such requests shut the service for everyone. 'close' stays the
 * fallback for a request that is never answered (its client went away). A change to Node's
 * response prototypes for the whole process: installed by installProcessWide (process-wide.ts).
 */
export function releaseResponsesOnAnswer(): void {
  if (answerReleases) return;
  answerReleases = true;
  for (const proto of [http.ServerResponse.prototype, http2.Http2ServerResponse.prototype] as unknown as Record<'end' | 'writeHead', (...a: unknown[]) => unknown>[]) {
    for (const method of ['writeHead', 'end'] as const) {
      const original = proto[method];
      proto[method] = function releaseFirst(this: Timed, ...args: unknown[]) {
        const release = this[RELEASE];
        if (release) release.call(this);
        return original.apply(this, args);
      };
    }
  }
}

const JSON_UTF8 = 'application/json; charset=utf-8';
const RETRY_SOON = { 'retry-after': '1' };
const OVER_CAPACITY = prepareError(Errors.serviceUnavailable('the service is over capacity; retry shortly', RETRY_SOON), JSON_UTF8);
const CLIENT_SHARE = prepareError(Errors.serviceUnavailable('this client has its share of the requests in progress; retry shortly', RETRY_SOON), JSON_UTF8);
const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * Overload protection: past capacity the service sheds new requests with 503
 * `service_unavailable` and `Retry-After: 1` rather than queueing them without end (memory and
 * latency would grow with the backlog). Two signals: requests in progress (a hard bound on the
 * work held in memory; adapted below MAX_INFLIGHT_REQUESTS while the process is saturated and
 * slow, adaptive-limit.ts, so that what is admitted stays fast) and event-loop delay (the
 * process is saturated: what is admitted would wait anyway). Health and metrics endpoints are
 * exempt. One client address may hold at most `maxInflightPerClient` of the places, so that a
 * client with many slow requests (bodies sent a byte at a time, up to BODY_TIMEOUT_MS each)
 * cannot take every place from the others.
 *
 * The check runs in the Node request handler, before Fastify sees the request: a refusal costs
 * the HTTP parse and one preformatted write (an ErrorResponse with `x-trace-id`, like every
 * answer), a fraction of an admitted request. A refusal through Fastify (routing, hooks, error
 * handler) costs about as much as a small request, so at 5x the sustainable rate the refusals
 * alone would saturate the process and everything, admitted or not, would queue for seconds
 * (docs/benchmarks.md, "Overload at 5x").
 */
export class LoadShedder {
  private inflight = 0;
  private saturated = false;
  /** Sampled from start() on: the loop's delays while the service is starting are not load. */
  private delay: LoopDelay | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private shedSinceLog = 0;
  private readonly adaptive: AdaptiveLimit | null;
  private limit: number;
  private elu: EventLoopUtilization = performance.eventLoopUtilization();
  /** Ends an admitted request, once; a plain function: it runs with the response as `this`. */
  private readonly release: (this: Timed) => void;
  /** Requests in progress per client, with a per-client bound. */
  private readonly perClient: Map<string, number> | null;
  private readonly clientCap: number;

  constructor(private readonly o: LoadSheddingOptions) {
    const shedder = this;
    this.release = function release(this: Timed) {
      if (this[RELEASE] === null) return;
      this[RELEASE] = null;
      shedder.inflight--;
      const client = this[CLIENT];
      if (client !== undefined) shedder.releaseClient(client);
      const at = this[ADMITTED_AT];
      if (at !== undefined) shedder.adaptive?.record(performance.now() - at);
    };
    this.limit = o.maxInflight;
    this.clientCap = Math.max(1, o.maxInflightPerClient ?? o.maxInflight);
    this.perClient = this.clientCap < o.maxInflight && o.clientOf ? new Map() : null;
    if (!answerReleases) throw new Error('LoadShedder needs installProcessWide() (src/process-wide.ts) to have run: it releases places on answer');
    this.adaptive = o.latencyTargetMs > 0 ? new AdaptiveLimit({ max: o.maxInflight, min: Math.min(8, o.maxInflight), targetMs: o.latencyTargetMs }) : null;
  }

  /**
   * Starts reading the event loop's delay (and adapting the limit), once the server listens:
   * a loop held by the start itself (migrations, compiling routes) would otherwise shed the
   * first second of requests.
   */
  start(): void {
    if (this.delay) return;
    const o = this.o;
    const delay = new LoopDelay(this.adaptive ? WINDOW_DELAY_RESOLUTION_MS : DELAY_RESOLUTION_MS, 2);
    this.delay = delay;
    this.timers.push(
      setInterval(() => {
        this.saturated = delay.take(SECOND) > o.maxEventLoopDelayMs;
        if (this.shedSinceLog > 0) {
          o.logger?.warn({ shed: this.shedSinceLog, inflight: this.inflight, limit: this.limit, eventLoopSaturated: this.saturated }, 'service unavailable: requests shed (over capacity)');
          this.shedSinceLog = 0;
        }
      }, 1000),
    );
    if (this.adaptive) this.timers.push(setInterval(() => this.endWindow(delay), WINDOW_MS));
    for (const t of this.timers) t.unref();
  }

  /** Requests admitted and not yet answered. */
  get inProgress(): number {
    return this.inflight;
  }

  /** How many requests may be in progress at once now (MAX_INFLIGHT_REQUESTS, or less while adapted). */
  get currentLimit(): number {
    return this.limit;
  }

  /** The Node request handler `handler`, behind the admission check. */
  wrap(handler: Handler): Handler {
    return (req, res) => {
      if (this.admit(req, res)) handler(req, res);
    };
  }

  private endWindow(delay: LoopDelay): void {
    const elu = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(elu, this.elu).utilization;
    this.elu = elu;
    const lagMs = delay.take(WINDOW);
    this.limit = this.adaptive!.endWindow(busy >= SATURATED_ELU, lagMs);
  }

  private admit(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    // Health checks and scrapes are exempt however the target is written (a scrape through a
    // proxy names it in absolute form).
    const url = originForm(req.url ?? '/');
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    // The console's files are static and cheap, like health checks: the operator's console
    // loads while the service sheds the API's load.
    if (EXEMPT.has(path) || path.startsWith('/console/')) return true;
    if (this.inflight >= this.limit || this.saturated) return this.shed(res, OVER_CAPACITY);
    if (this.perClient) {
      const client = this.o.clientOf!(req);
      const held = this.perClient.get(client) ?? 0;
      if (held >= this.clientCap) return this.shed(res, CLIENT_SHARE);
      this.perClient.set(client, held + 1);
      (res as Timed)[CLIENT] = client;
    }
    this.inflight++;
    if (this.adaptive) (res as Timed)[ADMITTED_AT] = performance.now();
    (res as Timed)[RELEASE] = this.release;
    // `on`, not `once`: a response closes once, and release runs once (RELEASE).
    res.on('close', this.release);
    if (this.o.bodyTimeoutMs && !req.complete && bodyMayFollow(req)) watchBody(req, res, this.o.bodyTimeoutMs);
    return true;
  }

  private shed(res: http.ServerResponse, answer: PreparedError): false {
    this.shedSinceLog++;
    this.o.onShed?.();
    // Answered before the body is read; Node discards the rest of the body and keeps the
    // connection for the next request.
    writePreparedError(res, answer, newTraceId());
    return false;
  }

  private releaseClient(client: string): void {
    const held = (this.perClient!.get(client) ?? 1) - 1;
    if (held > 0) this.perClient!.set(client, held);
    else this.perClient!.delete(client);
  }

  close(): void {
    for (const t of this.timers) clearInterval(t);
    this.delay?.close();
  }
}

/**
 * The event loop's longest delay per reading, sampled by a timer every `resolutionMs`: how much
 * later than due the timer ran. A reading also counts the delay still in progress (the time since
 * the last sample), so a hold that ends just before the reading's own timer runs is seen:
 * timers that fell due during a hold run one after the other right after it, and a reading
 * taken before the sampler's next tick would otherwise miss the hold entirely (perf_hooks'
 * monitorEventLoopDelay drops that gap when its histogram is reset). `readings` independent
 * readings, each the longest delay since it was last taken.
 */
class LoopDelay {
  private last = performance.now();
  private readonly worst: number[];
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly resolutionMs: number,
    readings: number,
  ) {
    this.worst = new Array<number>(readings).fill(0);
    this.timer = setInterval(() => this.sample(), resolutionMs);
    this.timer.unref();
  }

  private sample(): void {
    const now = performance.now();
    const late = now - this.last - this.resolutionMs;
    this.last = now;
    for (let i = 0; i < this.worst.length; i++) if (late > this.worst[i]!) this.worst[i] = late;
  }

  /** The longest delay (ms) since reading `i` was last taken, including one in progress. */
  take(i: number): number {
    this.sample();
    const worst = this.worst[i]!;
    this.worst[i] = 0;
    return worst;
  }

  close(): void {
    clearInterval(this.timer);
  }
}

/**
 * On a response answered 408 because its body did not arrive: the trace id that answer carried.
 * The request reaches the service's handler (and gets its own id) before that, so the request
 * log reads this to name the id the client saw.
 */
const LATE_BODY_TRACE = Symbol('lateBodyTrace');

/** The x-trace-id of a 408 for a body that did not arrive, else undefined. */
export function lateBodyTraceId(res: object): string | undefined {
  return (res as { [LATE_BODY_TRACE]?: string })[LATE_BODY_TRACE];
}

const BODY_LATE = prepareError(Errors.requestTimeout('the request body did not arrive in time'), JSON_UTF8);

/**
 * Answers 408 and closes the connection (HTTP/2: the stream) when the body is still incomplete
 * after `ms`. Nothing else has answered then: the handler runs once the body is in.
 */
function watchBody(req: http.IncomingMessage, res: http.ServerResponse, ms: number): void {
  const timer = setTimeout(() => {
    if (req.complete || res.headersSent || res.writableEnded) return;
    const stream = (req as unknown as { stream?: { close(code?: number): void } }).stream;
    const traceId = newTraceId();
    (res as { [LATE_BODY_TRACE]?: string })[LATE_BODY_TRACE] = traceId;
    writePreparedError(res, BODY_LATE, traceId, stream ? undefined : { connection: 'close' }, () => (stream ? stream.close() : req.socket.destroy()));
  }, ms);
  timer.unref();
  const clear = (): void => clearTimeout(timer);
  // `on`, not `once`: each event comes once, and clearing twice does nothing.
  req.on('end', clear);
  res.on('close', clear);
}
