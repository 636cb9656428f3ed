import { Type } from 'typebox';

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
const ALWAYS = [400, 405, 408, 413, 415, 417, 500, 503];

/**
 * Response map for a route: the 200 shape, ALWAYS, and the error statuses only it answers
 * (401 for an authenticated route, 404, 409, 429, ...).
 */
export function responses(ok: Record<number, unknown>, errorStatuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = { ...ok };
  for (const s of [...ALWAYS, ...errorStatuses]) out[s] = ErrorResponse;
  return out;
}
