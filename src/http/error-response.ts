import http from 'node:http';
import type http2 from 'node:http2';
import type { FastifyReply } from 'fastify';
import type { ApiError } from '../errors.js';
import { newTraceId } from './trace.js';

/**
 * The one writer of error answers: every 4xx and 5xx body is an ErrorResponse
 * `{"error", "message"}` (rest-interface 2.7) made here from an ApiError of the catalogue
 * (src/errors.ts), whichever layer answers: Fastify's handlers, the Node request handler
 * before routing (load shedding, unknown methods, Expect), or a raw socket (a request Node
 * could not parse, CONNECT).
 */
export function errorBody(err: ApiError): { error: string; message: string } {
  return { error: err.code, message: err.message };
}

export function errorJson(err: ApiError): string {
  return JSON.stringify(errorBody(err));
}

/** An error answered through Fastify (the route's ErrorResponse serializer writes the body). */
export function sendError(reply: FastifyReply, err: ApiError): void {
  reply.code(err.status).headers(err.headers).type('application/json').send(errorBody(err));
}

/** An error made once and answered many times, on a path where each answer must stay cheap. */
export interface PreparedError {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** `err` as a PreparedError sent with `contentType`. */
export function prepareError(err: ApiError, contentType = 'application/json'): PreparedError {
  return { status: err.status, headers: { 'content-type': contentType, ...err.headers }, body: Buffer.from(errorJson(err)) };
}

/** Writes a PreparedError on a Node response (HTTP/1.1 or HTTP/2), with its trace id. */
export function writePreparedError(res: http.ServerResponse | http2.Http2ServerResponse, e: PreparedError, traceId: string, extra?: http.OutgoingHttpHeaders, onSent?: () => void): void {
  (res as http.ServerResponse).writeHead(e.status, { ...e.headers, 'x-trace-id': traceId, 'content-length': e.body.length, ...extra });
  (res as http.ServerResponse).end(e.body, onSent);
}

/** Writes an error on a Node response, outside Fastify (answered before routing). */
export function writeError(res: http.ServerResponse | http2.Http2ServerResponse, err: ApiError, traceId: string): void {
  writePreparedError(res, prepareError(err), traceId);
}

/** A raw HTTP/1.1 ErrorResponse that closes its connection, with a trace id like every answer. */
export function rawErrorResponse(err: ApiError, traceId = newTraceId()): string {
  const body = errorJson(err);
  const lines = Object.entries(err.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return (
    `HTTP/1.1 ${err.status} ${http.STATUS_CODES[err.status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-trace-id: ${traceId}\r\n${lines}Connection: close\r\n\r\n${body}`
  );
}
