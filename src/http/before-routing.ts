import http from 'node:http';
import type net from 'node:net';
import { Errors, type ApiError } from '../errors.js';
import type { Handler } from './dual-server.js';
import { newTraceId } from './trace.js';
import { answerLast } from './raw-answer.js';
import { rawErrorResponse, writeError } from './error-response.js';
import type { RefusalReason, RefusalSink } from './refusals.js';

/*
 * Requests answered in the Node request handler or on the socket, before Fastify routes them:
 * methods no router knows, a missing Host, an Expect refused, bytes that are not HTTP.
 */

const KNOWN_METHODS = new Set(http.METHODS);

/**
 * HTTP/2 takes any token as a method; HTTP/1.1's parser only those it knows (400 otherwise). A
 * method no router knows reached Fastify's last-resort 404, with two warnings and the route tree
 * in the log each time: answered here as HTTP/1.1 answers it.
 */
export function refuseUnknownMethods(handler: Handler, refused: RefusalSink): Handler {
  return (req, res) => {
    // Pipelined behind a request refused with Connection: close (417): not run (RFC 9112 9.6).
    // Its answer is never sent; Node closes the connection after the refusal.
    if (closingConnections.has(req.socket)) return;
    if (!KNOWN_METHODS.has(req.method ?? '')) return answerBeforeRouting(res, Errors.invalidRequest('the request method is not an HTTP method this service knows'), 'unknown_method', refused);
    // Node's own check (requireHostHeader, off) would answer 400 with no body at all.
    if (req.headers.host === undefined && req.httpVersion === '1.1') return answerBeforeRouting(res, Errors.invalidRequest('an HTTP/1.1 request needs a Host header'), 'missing_host', refused);
    handler(req, res);
  };
}

/** HTTP/1.1 connections answered with Connection: close while more requests may follow on them. */
const closingConnections = new WeakSet<object>();

/**
 * An Expect other than 100-continue: Node answers 417 with no body unless someone listens;
 * answered as every other error is (RFC 9110 10.1.1 allows refusing it).
 */
export function refuseExpectation(req: http.IncomingMessage, res: http.ServerResponse, refused: RefusalSink): void {
  res.shouldKeepAlive = false;
  if (req.httpVersionMajor === 1) closingConnections.add(req.socket);
  answerBeforeRouting(res, Errors.expectationFailed('Expect: only 100-continue is supported'), 'expectation', refused);
}

/** An ErrorResponse for a request refused before Fastify sees it. */
function answerBeforeRouting(res: http.ServerResponse, err: ApiError, reason: RefusalReason, refused: RefusalSink): void {
  const traceId = newTraceId();
  writeError(res, err, traceId);
  refused({ status: err.status, reason, traceId });
}

/**
 * Bytes that are not a parseable HTTP request never reach routing; answer them in the same
 * ErrorResponse shape (with a trace id) and close the connection, instead of Fastify's default.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException & { code?: string }, socket: net.Socket, refused: RefusalSink): void {
  const make = err.code === 'HPE_HEADER_OVERFLOW' ? Errors.headersTooLarge : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? Errors.requestTimeout : Errors.invalidRequest;
  const reason: RefusalReason = make === Errors.headersTooLarge ? 'headers_too_large' : make === Errors.requestTimeout ? 'request_timeout' : 'malformed_request';
  // Counted as the answer is written: none is for a connection already gone (a reset).
  answerLast(socket, () => {
    const traceId = newTraceId();
    refused({ status: make.status, reason, traceId });
    return rawErrorResponse(make(`malformed HTTP request (${err.code ?? 'parse error'})`), traceId);
  });
}
