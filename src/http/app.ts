import { isUtf8 } from 'node:buffer';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type tls from 'node:tls';
import Fastify, { LogController, type FastifyContextConfig, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerFactory } from 'fastify';
import type { Logger } from 'pino';
import { isStorageTimeout, isStorageUnavailable } from '../db/index.js';
import { ApiError, Errors, isApiError } from '../errors.js';
import { describeValidationError, schemaCompiler } from './validation.js';
import { integerWrittenWithFraction } from './integer-literals.js';
import { announcesBody, bodyMayFollow } from './body-presence.js';
import { DualProtocolServer, HTTP2_MAX_STREAMS, openSessions, type Handler } from './dual-server.js';
import type { LoadShedder } from './load-shedding.js';
import { newTraceId } from './trace.js';
import { answerConnect, type AllowedMethods } from './connect.js';
import { originForm } from './request-target.js';
import { answerLast, rawErrorResponse } from './raw-answer.js';
import { ignoreRefusals, type RefusalReason, type RefusalSink } from './refusals.js';
import { systemClock, type Clock } from '../lib/clock.js';
import { UnknownSealingKeyError } from '../lib/secret-box.js';
import { isPromise, type MaybePromise } from '../lib/maybe-promise.js';
import { trackRoutes } from './route-table.js';
import { isJsonContentType } from '../lib/media-type.js';
import { UNSTORABLE } from '../lib/unstorable.js';

/**
 * Who may call a route: signed games and partners, the operator, clients holding an order
 * token, `provider`: a payment provider's callback (payments.md 4), unsigned by our scheme:
 * the route checks the provider's own signature, and its body may be other than JSON.
 */
export type AuthKind = 'game' | 'partner' | 'admin' | 'client' | 'provider' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; checked in preValidation, before the body is parsed. */
    auth?: AuthKind;
    /** Caller-state checks (403) that PROTOCOL 2 runs after the signature, before parameters. */
    precheck?: (req: FastifyRequest) => void | Promise<void>;
    /**
     * Answers web pages of any origin (`Access-Control-Allow-Origin: *`), refusals included:
     * the client API, called by games' web pages, whose credential is in the body (no cookies).
     */
    cors?: boolean;
  }
  interface FastifyRequest {
    rawBody?: Buffer;
    /** The authenticated caller (a game or partner snapshot), set by `authenticate`. */
    caller?: unknown;
    /** This request's route, read once (see routeOf). */
    routeInfo?: RouteInfo;
  }
}

/** What the pipeline needs of a request's route. */
export interface RouteInfo {
  /** The route pattern; undefined for an unmatched request. */
  url: string | undefined;
  config: FastifyContextConfig;
  bodySchema: JsonSchema | undefined;
}

/**
 * The request's route, memoized: Fastify's `req.routeOptions` builds a new object on every
 * read, and the pipeline reads it several times per request.
 */
export function routeOf(req: FastifyRequest): RouteInfo {
  let info = req.routeInfo;
  if (!info) {
    const o = req.routeOptions;
    info = { url: o.url, config: o.config, bodySchema: o.schema?.body as JsonSchema | undefined };
    req.routeInfo = info;
  }
  return info;
}

export interface AppHooks {
  /**
   * Runs the auth check for a route's `config.auth`; throws an ApiError on failure. Returns a
   * promise only when it has to wait (a caller's keys not in memory).
   */
  authenticate(req: FastifyRequest, kind: AuthKind): void | Promise<void>;
  /**
   * The part of `authenticate` that needs only the headers, run before the body is read (after
   * the 404/405, 415 and 413 checks): a request that cannot be authorized is answered without
   * waiting for a body. Throws an ApiError; returns a promise only when it has to wait.
   */
  screen?(req: FastifyRequest, kind: AuthKind): void | Promise<void>;
  /** True while the service drains for shutdown: new requests get 503. */
  isDraining(): boolean;
  /** Rate limit (PROTOCOL 2): after the signature, before caller-state checks; throws 429. */
  rateLimit?(req: FastifyRequest, reply: FastifyReply, kind: AuthKind): void | Promise<void>;
}

export interface AppOptions {
  logger: Logger;
  tls: { cert: Buffer; key: Buffer } | null;
  hooks: AppHooks;
  /** Fastify `trustProxy` (TRUST_PROXY): which proxies' X-Forwarded-For gives req.ip. */
  trustProxy?: boolean | number | string[];
  /** Overload protection: checked in the Node request handler, before Fastify. */
  shedder?: LoadShedder;
  /** Told of every request answered before routing (logs, metrics; see refusals.ts). */
  onRefused?: RefusalSink;
  /** What times the 503 warnings (one a second); the system clock unless given. */
  clock?: Clock;
}

export const BODY_LIMIT = 64 * 1024;
const MAX_PARAM_LENGTH = 1024;
const bodyTooLarge = () => Errors.bodyTooLarge(`request body must be at most ${BODY_LIMIT} bytes`);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** Answers of routes with `cors`: readable by pages of any origin, a 429's Retry-After too. */
const CORS_HEADERS = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'retry-after, x-trace-id' };
const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

export function createFastify(opts: AppOptions): FastifyInstance {
  const refused = opts.onRefused ?? ignoreRefusals;
  const common = {
    loggerInstance: opts.logger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    genReqId: () => newTraceId(),
    // No child logger per request (it costs more than a small request's own work): the lines
    // this service logs carry the trace id themselves, and request logging is our own hook.
    childLoggerFactory: ((logger: Logger) => logger) as never,
    requestIdHeader: false as const,
    return503OnClosing: false,
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: MAX_PARAM_LENGTH },
    clientErrorHandler: (err: NodeJS.ErrnoException, socket: net.Socket) => clientErrorHandler(err, socket, refused),
    frameworkErrors: ((error: FastifyError, req: FastifyRequest, reply: FastifyReply) => frameworkErrors(error, req, reply, refused)) as never,
    // A hop count is supported at runtime (proxy-addr) though Fastify's types omit it.
    trustProxy: (opts.trustProxy ?? false) as boolean,
  };
  const app = (
    opts.tls
      ? // Fastify ends idle HTTP/2 sessions itself (http2SessionTimeout, 72 s); the stream cap is ours.
        // requireHostHeader off for the HTTP/1.1 fallback too (Node 22+ passes it through): the handler answers a missing Host as an ErrorResponse.
        Fastify({ ...common, http2: true, https: { allowHTTP1: true, cert: opts.tls.cert, key: opts.tls.key, handshakeTimeout: 20_000, ...({ requireHostHeader: false } as object), settings: { maxConcurrentStreams: HTTP2_MAX_STREAMS } } })
      : Fastify({ ...common, serverFactory: ((handler: Handler) => new DualProtocolServer(refuseUnknownMethods(opts.shedder ? opts.shedder.wrap(handler) : handler, refused))) as unknown as FastifyServerFactory })
  ) as unknown as FastifyInstance;
  // The servers that parse requests: the TLS one serves both protocols itself.
  const protocolServers: http.Server[] = opts.tls ? [app.server as unknown as http.Server] : [(app.server as unknown as DualProtocolServer).http1, (app.server as unknown as DualProtocolServer).http2 as unknown as http.Server];
  if (opts.tls) {
    // The TLS server was made by Fastify with its handler as the 'request' listener.
    const server = app.server as unknown as http.Server;
    for (const l of server.listeners('request') as Handler[]) {
      server.off('request', l);
      server.on('request', refuseUnknownMethods(opts.shedder ? opts.shedder.wrap(l) : l, refused));
    }
    trackTlsConnections(server as unknown as http2.Http2SecureServer);
  }
  for (const server of protocolServers) server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => refuseExpectation(req, res, refused));

  app.setValidatorCompiler(schemaCompiler);
  trackRoutes(app);
  // Per-request fields declared up front: every request object keeps one shape.
  for (const field of ['rawBody', 'caller', 'routeInfo']) app.decorateRequest(field, null);
  const allowedAt = installPipeline(app, opts.hooks, opts.clock ?? systemClock);
  for (const server of protocolServers) answerConnect(server, allowedAt, refused);
  return app;
}

function installPipeline(app: FastifyInstance, hooks: AppHooks, clock: Clock): AllowedMethods {
  // Every route path with the methods it answers, to tell 405 (known path) from 404.
  const routes = new Map<string, Set<string>>();
  app.addHook('onRoute', (r) => {
    const methods = routes.get(r.url) ?? new Set<string>();
    for (const m of [r.method].flat()) methods.add(m);
    routes.set(r.url, methods);
  });

  // Callback-style hooks where nothing is awaited: an async hook costs a promise per request.
  app.addHook('onRequest', (req, reply, done) => {
    let pending: MaybePromise<void>;
    try {
      screenRequest(req, reply);
      pending = hooks.screen?.(req, routeOf(req).config.auth ?? 'none');
    } catch (e) {
      return done(e as Error);
    }
    if (isPromise(pending)) pending.then(() => done(), done);
    else done();
  });
  const screenRequest = (req: FastifyRequest, reply: FastifyReply): void => {
    reply.header('x-trace-id', req.id);
    if (routeOf(req).config.cors) reply.headers(CORS_HEADERS);
    if (hooks.isDraining()) throw Errors.serviceUnavailable('the service is shutting down; retry on another instance');
    // PROTOCOL 2 order: method (405, by routing) -> media type (415) -> size (413) -> ...
    // An unmatched request is answered here, before its body is read or parsed, so 404/405
    // win over 413 and over the body checks of preValidation.
    if (req.is404) throw unmatched(req);
    if (BODY_METHODS.has(req.method)) {
      if (req.headers['content-encoding'] !== undefined) refuseCoding('Content-Encoding', req.headers['content-encoding'], 'identity');
      if (req.headers['transfer-encoding'] !== undefined) refuseCoding('Transfer-Encoding', req.headers['transfer-encoding'], 'chunked');
      if (routeOf(req).url && routeOf(req).config.auth !== 'provider' && !isJsonContentType(req.headers['content-type'])) {
        // An action that takes no body (redeliver, new key, cancel) may be sent without one.
        if (!(bodyOptional(req) && !announcesBody(req.headers))) throw Errors.unsupportedMediaType('Content-Type must be application/json');
      }
      // Here, not when the body is read: the headers' signature checks come next (413 before 401).
      // HTTP/1.1: the connection closes after the answer rather than reading the body to its end.
      if (Number(req.headers['content-length']) > BODY_LIMIT) {
        if (req.raw.httpVersionMajor === 1) reply.header('connection', 'close');
        throw bodyTooLarge();
      }
    } else if (announcesBody(req.headers)) screenUnwantedBody(req);
  };

  // Keep the raw bytes: the signature covers them, and malformed JSON must be reported only
  // after the signature check (400 comes after 401).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (req, body, done) => {
    req.rawBody = body as Buffer;
    done(null, undefined);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (req, body, done) => {
    req.rawBody = body as Buffer;
    done(null, undefined);
  });

  // PROTOCOL 2 order: signature (401) -> rate limit (429) -> caller state (403) -> body (400).
  // Each step may return a promise; the hook waits only for those that do (most requests find
  // their caller in memory and never wait), so a request costs no promise per step.
  const step = (i: number, req: FastifyRequest, reply: FastifyReply): void | Promise<void> => {
    const cfg = routeOf(req).config;
    switch (i) {
      case 0:
        // A GET's body is never read by Fastify; the signature covers it all the same.
        if (req.rawBody === null && (req.method === 'GET' || req.method === 'HEAD') && bodyMayFollow(req.raw)) {
          return readUnwantedBody(req).then(() => {
            // Over HTTP/2 a body may come without a length: its media type is known only now.
            if ((req.rawBody as Buffer).length > 0) screenUnwantedBody(req);
            return hooks.authenticate(req, cfg.auth ?? 'none');
          });
        }
        return hooks.authenticate(req, cfg.auth ?? 'none');
      case 1:
        return hooks.rateLimit?.(req, reply, cfg.auth ?? 'none');
      case 2:
        return cfg.precheck?.(req);
      default:
        return prepareBody(req);
    }
  };
  const runSteps = (from: number, req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    for (let i = from; i < 4; i++) {
      let pending: MaybePromise<void>;
      try {
        pending = step(i, req, reply);
      } catch (e) {
        return done(e as Error);
      }
      if (isPromise(pending)) {
        pending.then(() => runSteps(i + 1, req, reply, done), done);
        return;
      }
    }
    done();
  };
  app.addHook('preValidation', (req, reply, done) => runSteps(0, req, reply, done));

  /** The body, parsed after authentication, with what no database can store refused. */
  const prepareBody = (req: FastifyRequest): void => {
    // NUL cannot be stored in PostgreSQL text and is never meaningful in an id or filter: a
    // parameter error (400), so after the signature, rate limit and caller state (PROTOCOL 2).
    if (req.url.includes('%00')) throw Errors.invalidRequest(nulMessage(req.url));
    const route = routeOf(req);
    const cfg = route.config;
    if (!BODY_METHODS.has(req.method)) {
      if (req.rawBody && req.rawBody.length > 0) throw Errors.invalidRequest(`${req.method} ${route.url} takes no request body`);
    } else {
      const empty = !req.rawBody || req.rawBody.length === 0;
      if (empty && bodyOptional(req)) req.body = {};
      // A provider's callback in its own format (a form post): the route reads the text.
      else if (cfg.auth === 'provider' && !isJsonContentType(req.headers['content-type'])) req.body = bodyText(req.rawBody);
      else if (!isJsonContentType(req.headers['content-type'])) throw Errors.unsupportedMediaType('Content-Type must be application/json');
      else {
        const text = bodyText(req.rawBody);
        req.body = parseJsonBody(text);
        const field = integerWrittenWithFraction(text, route.bodySchema);
        if (field) throw Errors.invalidRequest(`${field} must be an integer, written without a fraction part (2, not 2.0)`);
      }
    }
    // NUL and lone surrogates can only arrive percent-encoded in the URL or as \\u escapes in
    // JSON (raw bytes of either are refused earlier): skip the walk when neither is present.
    if (req.url.includes('%')) {
      rejectBadPercentEncoding(req.url);
      rejectUnstorable(req.params, 'path parameter ');
      rejectUnstorable(req.query, 'query parameter ');
    }
    if (req.rawBody?.includes(BACKSLASH_U)) rejectUnstorable(req.body, '');
    // The ""-as-absent rule is for SDK callers (PROTOCOL 3); an operator's "" is a value to validate.
    if (cfg.auth !== 'admin' && cfg.auth !== 'provider') stripEmptyOptionalStrings(req.body, route.bodySchema);
  };

  const unmatched = (req: FastifyRequest): ApiError => {
    const path = originForm(req.url).split('?')[0] as string;
    const allowed = findAllowedMethods(routes, path);
    return allowed
      ? Errors.methodNotAllowed(`${req.method} is not allowed on ${path}; use ${allowed.join(', ')}`, { allow: allowed.join(', ') })
      : Errors.notFound(`no endpoint at ${path}`);
  };
  app.setNotFoundHandler((req, reply) => sendError(reply, unmatched(req)));

  // 503s come in floods (overload, a database restart): one warning per second, not one per
  // request, so logging cannot become the next overload. Other 5xx are logged each.
  let last503Log = 0;
  let quiet503 = 0;
  app.setErrorHandler((error: FastifyError | ApiError, req, reply) => {
    // A client that went away while sending its body: its own doing, not an unreachable store
    // (its ECONNRESET read as the database's), and no one reads the answer.
    const apiError = !isApiError(error) && req.raw.readableAborted ? Errors.invalidRequest('the connection closed before the request body arrived') : toApiError(error);
    if (apiError.status === 503) {
      const now = clock.now();
      if (now - last503Log >= 1000) {
        req.log.warn({ reason: apiError.message, traceId: req.id, alsoSinceLastLine: quiet503 }, 'service unavailable');
        last503Log = now;
        quiet503 = 0;
      } else quiet503++;
    } else if (apiError.status === 500) req.log.error({ err: error, traceId: req.id }, 'request failed');
    // Any other 5xx is an answer the code chose (501 for a Combo-only SDK method): expected,
    // so a warning naming it, without a stack. 500 is the unexpected: a bug, with its stack.
    else if (apiError.status > 500) req.log.warn({ status: apiError.status, error: apiError.code, reason: apiError.message, route: routeOf(req).url, traceId: req.id }, 'request refused');
    // Fastify asks to close the connection after a body it could not read (413); HTTP/2 has no
    // connection header (Node drops it with an UnsupportedWarning on stderr): the stream ends.
    if (req.raw.httpVersionMajor === 2) reply.removeHeader('connection');
    sendError(reply, apiError);
  });
  return (path) => findAllowedMethods(routes, path);
}

/**
 * The TLS server (Fastify's Http2SecureServer) has none of what DualProtocolServer gives the
 * cleartext port: its idle HTTP/2 sessions held a graceful close until their 72 s time-out, and
 * the shutdown's force (closeAllConnections) did not exist, so a silent connection (even one
 * that never finished its handshake) held the exit for ever. Connections are tracked; close()
 * ends the sessions (GOAWAY) as it does in cleartext; closeAllConnections destroys everything.
 * The time-outs are the cleartext port's: a handshake (first bytes) within 20 s, headers within
 * 20 s, a whole HTTP/1.1 request within 30 s, checked every second.
 */
function trackTlsConnections(server: http2.Http2SecureServer): void {
  // HTTP/1.1 over TLS answers a client that half-closes after its request, as in cleartext
  // (dual-server.ts): Node's HTTP/1.1 handling reads this flag from the server it runs under.
  (server as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    if (socket.alpnProtocol !== 'h2') socket.allowHalfOpen = true;
  });
  const sockets = new Set<net.Socket>();
  const sessions = openSessions(server);
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const t = server as unknown as { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number; closeAllConnections?: () => void };
  t.headersTimeout = 20_000;
  t.requestTimeout = 30_000;
  // Read when the server starts listening (Node's default for this server: every 30 s).
  t.connectionsCheckingInterval = 1000;
  const close = server.close.bind(server);
  server.close = ((cb?: (err?: Error) => void) => {
    close(cb);
    for (const session of sessions) session.close();
    return server;
  }) as typeof server.close;
  t.closeAllConnections = () => {
    for (const session of sessions) session.destroy();
    for (const socket of sockets) socket.destroy();
  };
}

const KNOWN_METHODS = new Set(http.METHODS);

/**
 * HTTP/2 takes any token as a method; HTTP/1.1's parser only those it knows (400 otherwise). A
 * method no router knows reached Fastify's last-resort 404, with two warnings and the route tree
 * in the log each time: answered here as HTTP/1.1 answers it.
 */
function refuseUnknownMethods(handler: Handler, refused: RefusalSink): Handler {
  return (req, res) => {
    // Pipelined behind a request refused with Connection: close (417): not run (RFC 9112 9.6).
    // Its answer is never sent; Node closes the connection after the refusal.
    if (closingConnections.has(req.socket)) return;
    if (!KNOWN_METHODS.has(req.method ?? '')) return answerBeforeRouting(res, 400, 'unknown_method', 'the request method is not an HTTP method this service knows', refused);
    // Node's own check (requireHostHeader, off) would answer 400 with no body at all.
    if (req.headers.host === undefined && req.httpVersion === '1.1') return answerBeforeRouting(res, 400, 'missing_host', 'an HTTP/1.1 request needs a Host header', refused);
    handler(req, res);
  };
}

/** HTTP/1.1 connections answered with Connection: close while more requests may follow on them. */
const closingConnections = new WeakSet<object>();

/**
 * An Expect other than 100-continue: Node answers 417 with no body unless someone listens;
 * answered as every other error is (RFC 9110 10.1.1 allows refusing it).
 */
function refuseExpectation(req: http.IncomingMessage, res: http.ServerResponse, refused: RefusalSink): void {
  res.shouldKeepAlive = false;
  if (req.httpVersionMajor === 1) closingConnections.add(req.socket);
  answerBeforeRouting(res, 417, 'expectation', 'Expect: only 100-continue is supported', refused);
}

/** An ErrorResponse for a request refused before Fastify sees it. */
function answerBeforeRouting(res: http.ServerResponse, status: number, reason: RefusalReason, message: string, refused: RefusalSink): void {
  const traceId = newTraceId();
  const body = JSON.stringify({ error: 'invalid_request', message });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-trace-id': traceId });
  res.end(body);
  refused({ status, reason, traceId });
}

/**
 * Bytes that are not a parseable HTTP request never reach routing; answer them in the same
 * ErrorResponse shape (with a trace id) and close the connection, instead of Fastify's default.
 */
function clientErrorHandler(err: NodeJS.ErrnoException & { code?: string }, socket: net.Socket, refused: RefusalSink): void {
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const reason: RefusalReason = status === 431 ? 'headers_too_large' : status === 408 ? 'request_timeout' : 'malformed_request';
  // Counted as the answer is written: none is for a connection already gone (a reset).
  answerLast(socket, () => {
    const traceId = newTraceId();
    refused({ status, reason, traceId });
    return rawErrorResponse(status, 'invalid_request', `malformed HTTP request (${err.code ?? 'parse error'})`, {}, traceId);
  });
}

/**
 * What the router refuses before any hook runs (a path that is not percent-encoded UTF-8, a
 * path parameter over maxParamLength), answered like every other error: an ErrorResponse with
 * a trace id, without echoing the path.
 */
function frameworkErrors(error: FastifyError, req: FastifyRequest, reply: FastifyReply, refused: RefusalSink): void {
  reply.header('x-trace-id', req.id);
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `a path parameter is longer than ${MAX_PARAM_LENGTH} characters`
      : 'the path is not valid: a percent-encoded sequence in it is not UTF-8';
  sendError(reply, Errors.invalidRequest(message));
  refused({ status: 400, reason: 'bad_path', traceId: req.id });
}

function sendError(reply: FastifyReply, err: ApiError): void {
  reply.code(err.status).headers(err.headers).type('application/json').send({ error: err.code, message: err.message });
}

function nulMessage(url: string): string {
  const q = url.indexOf('?');
  if (q >= 0) {
    for (const [name, value] of new URLSearchParams(url.slice(q + 1))) {
      if (value.includes('\0') || name.includes('\0')) return `query parameter ${name.replace(/\0/g, '')} must not contain U+0000`;
    }
  }
  return 'the path must not contain %00';
}

/** A route whose body has no required field (or no body schema at all) can go without a body. */
function bodyOptional(req: FastifyRequest): boolean {
  const schema = routeOf(req).bodySchema;
  return !schema || !schema.required || schema.required.length === 0;
}

/** The body as text: it must be there, and be UTF-8. */
function bodyText(raw: Buffer | undefined): string {
  if (!raw || raw.length === 0) throw Errors.invalidRequest('request body must be a JSON object');
  if (!isUtf8(raw)) throw Errors.invalidRequest('request body is not valid UTF-8');
  return raw.toString('utf8');
}

/**
 * Bodies are read as sent, never decompressed, and the signature covers those bytes: a coded
 * body is a media-type problem (415, RFC 9110 15.5.16), not malformed JSON, and a plain body
 * labelled as coded is not taken on trust. Node's parser takes `Transfer-Encoding: gzip,
 * chunked` and undoes only the chunking: any transfer coding but chunked is refused alike.
 */
function refuseCoding(header: 'Content-Encoding' | 'Transfer-Encoding', value: string, plain: 'identity' | 'chunked'): void {
  if (value.trim().toLowerCase() === plain) return;
  throw Errors.unsupportedMediaType(`${header} ${JSON.stringify(value.slice(0, 32))} is not supported${header === 'Transfer-Encoding' ? ': only chunked' : ''}; send the body uncompressed`);
}

/**
 * The router's query parser keeps a sequence it cannot decode (`%FF`, `%zz`, an encoded lone
 * surrogate) as literal text, so `%FF` and `%25FF` would name the same value: a parameter
 * error instead, as the path's own check answers it.
 */
function rejectBadPercentEncoding(url: string): void {
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('%', q)) return;
  for (const pair of url.slice(q + 1).split('&')) {
    try {
      decodeURIComponent(pair);
    } catch {
      const name = pair.split('=')[0] as string;
      let shown = name;
      try {
        shown = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // the name itself is the bad part: shown as sent
      }
      throw Errors.invalidRequest(`query parameter ${shown.slice(0, 64)} is not valid percent-encoded UTF-8`);
    }
  }
}

/**
 * A body sent with a method whose routes take none (GET, DELETE): PROTOCOL 2's media type and
 * size checks apply to it as to any body (415, 413); once the signature, which covers its bytes,
 * has been checked, it is refused as a parameter error (400, in prepareBody).
 */
function screenUnwantedBody(req: FastifyRequest): void {
  if (req.headers['content-encoding'] !== undefined) refuseCoding('Content-Encoding', req.headers['content-encoding'], 'identity');
  if (!isJsonContentType(req.headers['content-type'])) throw Errors.unsupportedMediaType('a request body needs Content-Type: application/json');
  const len = Number(req.headers['content-length']);
  if (len > BODY_LIMIT) throw bodyTooLarge();
}

/** Reads a GET's body (Fastify leaves it unread) into rawBody, at most BODY_LIMIT bytes. */
function readUnwantedBody(req: FastifyRequest): Promise<void> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const raw = req.raw;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        raw.off('data', onData);
        reject(bodyTooLarge());
      } else chunks.push(chunk);
    };
    raw.on('data', onData);
    raw.once('end', () => {
      req.rawBody = Buffer.concat(chunks);
      resolve();
    });
    raw.once('error', reject);
  });
}

function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw Errors.invalidRequest(`request body is not valid JSON: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw Errors.invalidRequest('request body must be a JSON object');
  }
  return value;
}

/**
 * Strings that no database stores as sent are refused as bad parameters (400) instead of
 * failing at the INSERT (500 on PostgreSQL) or being silently replaced by U+FFFD.
 */
const BACKSLASH_U = Buffer.from('\\u');

function rejectUnstorable(value: unknown, where: string): void {
  // Iterative: a 64 KiB body can nest ~32k levels deep, too deep for recursion.
  const stack: [unknown, string][] = [[value, '']];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [v, path] = item;
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) throw Errors.invalidRequest(`${where}${shortPath(path) || 'value'} contains U+0000 or an unpaired surrogate`);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
        const p = path ? `${path}.${k}` : k;
        if (UNSTORABLE.test(k)) throw Errors.invalidRequest(`${where}a field name in ${shortPath(path) || 'the body'} contains U+0000 or an unpaired surrogate`);
        stack.push([child, p]);
      }
    }
  }
}

const shortPath = (p: string) => (p.length > 80 ? `${p.slice(0, 80)}...` : p);

type JsonSchema = { type?: string; properties?: Record<string, JsonSchema>; required?: string[] };

/**
 * PROTOCOL 3: an optional string field sent as "" is treated as absent (the Node SDK sends
 * `context: ""`). Driven by the route's own schema, recursively.
 */
function stripEmptyOptionalStrings(value: unknown, schema: JsonSchema | undefined): void {
  if (!schema?.properties || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  const obj = value as Record<string, unknown>;
  const { strings, objects } = optionalFieldsOf(schema);
  for (const name of strings) if (obj[name] === '') delete obj[name];
  for (const [name, prop] of objects) stripEmptyOptionalStrings(obj[name], prop);
}

const optionalFields = new WeakMap<JsonSchema, { strings: string[]; objects: [string, JsonSchema][] }>();

/** A schema's optional string fields and its object fields, worked out once per schema. */
function optionalFieldsOf(schema: JsonSchema): { strings: string[]; objects: [string, JsonSchema][] } {
  let fields = optionalFields.get(schema);
  if (!fields) {
    const required = new Set(schema.required ?? []);
    const props = Object.entries(schema.properties ?? {});
    fields = {
      strings: props.filter(([name, prop]) => prop.type === 'string' && !required.has(name)).map(([name]) => name),
      objects: props.filter(([, prop]) => prop.type === 'object'),
    };
    optionalFields.set(schema, fields);
  }
  return fields;
}

function findAllowedMethods(routes: Map<string, Set<string>>, path: string): string[] | null {
  const allowed = new Set<string>();
  for (const [url, methods] of routes) if (matchesPattern(url, path)) for (const m of methods) allowed.add(m);
  const list = ALL_METHODS.filter((m) => allowed.has(m));
  return list.length ? list : null;
}

function matchesPattern(pattern: string, path: string): boolean {
  const p = pattern.split('/');
  const a = path.split('/');
  if (p.length !== a.length && !pattern.endsWith('*')) return false;
  return p.every((seg, i) => seg === '*' || seg.startsWith(':') || seg === a[i]);
}

function toApiError(error: FastifyError | ApiError): ApiError {
  if (isApiError(error)) return error;
  const e = error as FastifyError;
  if (e.validation) return Errors.invalidRequest(describeValidationError(e.validation as never, e.validationContext ?? 'body'));
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return bodyTooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE'
        ? Errors.unsupportedMediaType('Content-Type must be application/json')
        : Errors.invalidRequest('Content-Length does not match the body');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return Errors.invalidRequest('request body must be a JSON object');
  }
  if (isStorageTimeout(error)) return Errors.serviceUnavailable('the database did not answer in time; retry later');
  if (isStorageUnavailable(error)) return Errors.serviceUnavailable('storage is unavailable; retry later');
  if (error instanceof UnknownSealingKeyError) return Errors.serviceUnavailable('this instance cannot open a stored key (SECRETS_KEY rotation in progress); retry later');
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return new ApiError(e.statusCode, 'invalid_request', e.message);
  }
  return Errors.internal('internal error');
}
