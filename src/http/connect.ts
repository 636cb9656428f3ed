import http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import { Errors, type ApiError } from '../errors.js';
import { newTraceId } from './trace.js';
import { answerLast } from './raw-answer.js';
import { rawErrorResponse, writeError } from './error-response.js';
import type { RefusalSink } from './refusals.js';

/** The methods a path is served with, or null for a path no route serves. */
export type AllowedMethods = (path: string) => string[] | null;

/**
 * CONNECT never reaches routing: with no listener, Node's HTTP/1.1 server drops the connection
 * without a word and its HTTP/2 layer answers a bare 405. This service is not a proxy, so
 * CONNECT is answered as any wrong method is (PROTOCOL 2): 405 with `Allow` on a path that has
 * routes, 404 on a path that has none, and 400 for a target that is no path at all (the
 * authority form CONNECT is meant for), each as an ErrorResponse with a trace id.
 */
export function connectRefusal(target: string | undefined, allowedAt: AllowedMethods): ApiError {
  if (!target?.startsWith('/')) return Errors.invalidRequest('CONNECT is not supported: this service is not a proxy');
  const path = target.split('?')[0] as string;
  const allowed = allowedAt(path);
  return allowed
    ? Errors.methodNotAllowed(`CONNECT is not allowed on ${path}; use ${allowed.join(', ')}`, { allow: allowed.join(', ') })
    : Errors.notFound(`no endpoint at ${path}`);
}

/**
 * Listens for CONNECT on a server. An HTTP/1.1 CONNECT hands over the bare socket (Node has
 * stopped parsing it): the answer is written raw and the connection closed. An HTTP/2 CONNECT
 * (also over TLS, where both protocols share one server) comes with a response object.
 */
export function answerConnect(server: http.Server | http2.Http2Server | http2.Http2SecureServer, allowedAt: AllowedMethods, refused: RefusalSink): void {
  server.on('connect', (req: http.IncomingMessage | http2.Http2ServerRequest, second: net.Socket | http2.Http2ServerResponse) => {
    const target = req instanceof http2.Http2ServerRequest ? req.headers[':path'] : req.url;
    const err = connectRefusal(target, allowedAt);
    if (second instanceof http2.Http2ServerResponse) {
      const traceId = newTraceId();
      writeError(second, err, traceId);
      refused({ status: err.status, reason: 'connect', traceId });
      return;
    }
    // After the answers of requests pipelined before it, as every last answer on a connection.
    answerLast(second, () => {
      const traceId = newTraceId();
      refused({ status: err.status, reason: 'connect', traceId });
      return rawErrorResponse(err, traceId);
    });
  });
}
