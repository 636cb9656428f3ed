import type http from 'node:http';
import type http2 from 'node:http2';
import type net from 'node:net';
import Fastify, { LogController, type FastifyError, type FastifyReply, type FastifyRequest, type FastifyServerFactory } from 'fastify';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../lib/clock.js';
import { clientErrorHandler, refuseExpectation, refuseUnknownMethods } from './before-routing.js';
import { BODY_LIMIT, installBodyParsers } from './body.js';
import { installCheckOrder, type AppHooks } from './check-order.js';
import { answerConnect } from './connect.js';
import { DualProtocolServer, HTTP2_MAX_STREAMS, type Handler } from './dual-server.js';
import { frameworkErrors, installErrorHandler } from './error-handler.js';
import type { LoadShedder } from './load-shedding.js';
import { ignoreRefusals, type RefusalSink } from './refusals.js';
import { MAX_PARAM_LENGTH, type ApiApp } from './route-info.js';
import { trackRoutes } from './route-table.js';
import { trackTlsConnections } from './tls-connections.js';
import { schemaCompiler } from './validation.js';
import { newTraceId } from './trace.js';

/*
 * The servers and the Fastify instance with the request pipeline: refusals before routing
 * (before-routing.ts), the check order (check-order.ts), the body (body.ts), and every error
 * answered from the catalogue (error-handler.ts, error-response.ts).
 */

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

export function createFastify(opts: AppOptions): ApiApp {
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
  ) as unknown as ApiApp;
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
  for (const field of ['rawBody', 'caller', 'routeInfo', 'screened']) app.decorateRequest(field, null);
  installBodyParsers(app);
  const allowedAt = installCheckOrder(app, opts.hooks);
  installErrorHandler(app, opts.clock ?? systemClock);
  for (const server of protocolServers) answerConnect(server, allowedAt, refused);
  return app;
}
