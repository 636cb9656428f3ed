/**
 * Requests answered before routing: the request log and combo_http_requests_total see only
 * routed requests, so without this a client whose requests are all refused here (a broken
 * client, a slow network, a scanner) left no trace at all. Load shedding's 503s are counted
 * apart (combo_http_requests_shed_total) and not logged: under overload a line per refusal
 * would add to the load. A body that does not arrive in time (408, BODY_TIMEOUT_MS) belongs to
 * a routed request: the request log and combo_http_requests_total have it.
 */
export type RefusalReason =
  /** HTTP/2 method no router knows (400). */
  | 'unknown_method'
  /** HTTP/1.1 request without Host (400). */
  | 'missing_host'
  /** Expect other than 100-continue (417). */
  | 'expectation'
  /** Bytes Node's HTTP/1.1 parser could not read as a request (400). */
  | 'malformed_request'
  /** Request head over Node's header size limit (431). */
  | 'headers_too_large'
  /** Request head or whole request not in within Node's time-outs (408). */
  | 'request_timeout'
  /** Path not percent-encoded UTF-8, or a path parameter over 1024 characters (400). */
  | 'bad_path'
  /** CONNECT (400, 404 or 405). */
  | 'connect';

export interface Refusal {
  status: number;
  reason: RefusalReason;
  /** The answer's x-trace-id. */
  traceId: string;
}

/** Told of every request answered before routing, as its answer is written. */
export type RefusalSink = (refusal: Refusal) => void;

export const ignoreRefusals: RefusalSink = () => {};
