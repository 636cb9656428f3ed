import { Type } from 'typebox';
import { Errors, type CatalogueError } from '../errors.js';

/** ErrorResponse (rest-interface 2.7): the body of every 4xx and 5xx answer. */
export const ErrorResponse = Type.Object(
  {
    error: Type.String({ description: 'machine-readable error type, e.g. `invalid_request` (PROTOCOL 2)' }),
    message: Type.String({ description: 'human-readable; names the offending field' }),
  },
  { $id: 'ErrorResponse', description: 'Body of every 4xx and 5xx response' },
);

export const EmptyObject = Type.Object({}, { additionalProperties: false });

/**
 * Any route can answer these, whatever it does: a request to it may carry a body (GET ones
 * too: its media type, size and arrival are checked, 415, 413, 408, then it is refused, 400) or
 * a %00 in its URL (400); its path answers another method 405; an Expect other than
 * 100-continue 417; 500 on a bug, 503 while the service drains, sheds load or cannot reach its
 * database (docs/api.md, "HTTP").
 */
const ALWAYS: readonly CatalogueError[] = [
  Errors.invalidRequest,
  Errors.methodNotAllowed,
  Errors.requestTimeout,
  Errors.bodyTooLarge,
  Errors.unsupportedMediaType,
  Errors.expectationFailed,
  Errors.internal,
  Errors.serviceUnavailable,
];

/**
 * Response map for a route: the 200 shape, ALWAYS, and the catalogue errors only it raises
 * (Errors.unauthorized for an operator route, Errors.notFound, Errors.rateLimited, ...), each
 * under its catalogue status.
 */
export function responses(ok: Record<number, unknown>, raises: readonly CatalogueError[]): Record<number, unknown> {
  const out: Record<number, unknown> = { ...ok };
  for (const e of [...ALWAYS, ...raises]) out[e.status] = ErrorResponse;
  return out;
}
