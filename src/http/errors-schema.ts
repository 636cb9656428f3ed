import { Type } from 'typebox';

/** ErrorResponse (rest-interface 2.7): the body of every non-200 answer. */
export const ErrorResponse = Type.Object(
  {
    error: Type.String({ description: 'machine-readable error type, e.g. `invalid_request` (PROTOCOL 2)' }),
    message: Type.String({ description: 'human-readable; names the offending field' }),
  },
  { $id: 'ErrorResponse', description: 'Body of every non-200 response' },
);

export const EmptyObject = Type.Object({}, { additionalProperties: false });

/**
 * Any route can answer these: 500 on a bug, 503 while the service drains, sheds load or cannot
 * reach its database (README, "HTTP").
 */
const ALWAYS = [500, 503];

/** Response map for a route: the 200 shape plus the error statuses it documents. */
export function responses(ok: Record<number, unknown>, errorStatuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = { ...ok };
  for (const s of [...errorStatuses, ...ALWAYS]) out[s] = ErrorResponse;
  return out;
}
