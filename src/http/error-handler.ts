import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isStorageTimeout, isStorageUnavailable } from '../db/index.js';
import { Errors, frameworkClientError, isApiError, type ApiError } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import { UnknownSealingKeyError } from '../lib/secret-box.js';
import { bodyTooLarge } from './body.js';
import { sendError } from './error-response.js';
import type { RefusalSink } from './refusals.js';
import { MAX_PARAM_LENGTH, routeOf } from './route-info.js';
import { describeValidationError } from './validation.js';

/** Every error a route's handling throws, answered from the catalogue (toApiError). */
export function installErrorHandler(app: FastifyInstance, clock: Clock): void {
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
}

/**
 * What the router refuses before any hook runs (a path that is not percent-encoded UTF-8, a
 * path parameter over maxParamLength), answered like every other error: an ErrorResponse with
 * a trace id, without echoing the path.
 */
export function frameworkErrors(error: FastifyError, req: FastifyRequest, reply: FastifyReply, refused: RefusalSink): void {
  reply.header('x-trace-id', req.id);
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? `a path parameter is longer than ${MAX_PARAM_LENGTH} characters`
      : 'the path is not valid: a percent-encoded sequence in it is not UTF-8';
  sendError(reply, Errors.invalidRequest(message));
  refused({ status: 400, reason: 'bad_path', traceId: req.id });
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
    return frameworkClientError(e.statusCode, e.message);
  }
  return Errors.internal('internal error');
}
