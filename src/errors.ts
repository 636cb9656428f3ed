import type { AuthKind } from './lib/auth-kind.js';

/**
 * The one catalogue of API errors. Each entry has exactly one `error` code and one HTTP status
 * (PROTOCOL 2); every error answer is written from an ApiError (src/http/error-response.ts), so
 * the status in the body can never differ from the HTTP status, and the OpenAPI document lists
 * the codes from here. Domain code throws these; it knows nothing of the HTTP framework.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** A catalogue entry: makes its ApiError, and names its status and code for the API document. */
export interface CatalogueError {
  (message: string, headers?: Record<string, string>): ApiError;
  readonly status: number;
  readonly code: string;
  /** The callers that can get this code (PROTOCOL 2, 7, 10, 11); unset: any caller. */
  readonly audience?: readonly AuthKind[];
}

function make(status: number, code: string, o: { always?: Record<string, string>; audience?: readonly AuthKind[] } = {}): CatalogueError {
  const always = o.always;
  const factory = (message: string, headers?: Record<string, string>): ApiError =>
    new ApiError(status, code, message, always ? { ...always, ...headers } : headers);
  return Object.assign(factory, { status, code, audience: o.audience });
}

// A 401 names the scheme that would be accepted (RFC 9110 15.5.2).
const SIGNATURE_CHALLENGE = { 'www-authenticate': 'SEAYOO-HMAC-SHA256' };
const BEARER_CHALLENGE = { 'www-authenticate': 'Bearer' };

export const Errors = {
  invalidRequest: make(400, 'invalid_request'),
  /** A request head or body not in within the time-outs (Node's, BODY_TIMEOUT_MS). */
  requestTimeout: make(408, 'invalid_request'),
  bodyTooLarge: make(413, 'invalid_request'),
  /** An Expect other than 100-continue (RFC 9110 10.1.1). */
  expectationFailed: make(417, 'invalid_request'),
  /** A request head over Node's header size limit. */
  headersTooLarge: make(431, 'invalid_request'),
  invalidSignature: make(401, 'invalid_signature', { always: SIGNATURE_CHALLENGE, audience: ['game', 'partner', 'provider'] }),
  // 'none': routes with a bearer token of their own (/metrics with METRICS_TOKEN).
  unauthorized: make(401, 'unauthorized', { always: BEARER_CHALLENGE, audience: ['admin', 'none'] }),
  invalidToken: make(401, 'invalid_token', { audience: ['client', 'provider'] }),
  /** An operator whose role or scope does not allow the action (operators.md 1), or a cookie-signed write without its CSRF token. */
  forbidden: make(403, 'forbidden', { audience: ['admin'] }),
  /** Sign-in with a password is right but the account needs its TOTP code (POST /admin/v1/session, auth none). */
  totpRequired: make(401, 'totp_required', { audience: ['none'] }),
  gameIapDisabled: make(403, 'game_iap_disabled', { audience: ['game'] }),
  accountBanned: make(403, 'account_banned', { audience: ['game'] }),
  rechargeLimitExceeded: make(403, 'recharge_limit_exceeded', { audience: ['game'] }),
  partnerDisabled: make(403, 'partner_disabled', { audience: ['partner'] }),
  channelUnavailable: make(403, 'channel_unavailable', { audience: ['client', 'provider'] }),
  notFound: make(404, 'not_found'),
  bindingNotFound: make(404, 'binding_not_found', { audience: ['partner'] }),
  roleNotFound: make(404, 'role_not_found', { audience: ['partner'] }),
  methodNotAllowed: make(405, 'method_not_allowed'),
  conflict: make(409, 'conflict'),
  unsupportedMediaType: make(415, 'unsupported_media_type'),
  duplicateReferenceId: make(422, 'duplicate_reference_id', { audience: ['game'] }),
  paymentRejected: make(422, 'payment_rejected', { audience: ['client', 'provider'] }),
  invalidState: make(409, 'invalid_state'),
  rateLimited: make(429, 'rate_limited'),
  internal: make(500, 'internal_error'),
  notImplemented: make(501, 'not_implemented', { audience: ['game'] }),
  serviceUnavailable: make(503, 'service_unavailable'),
} as const;

/**
 * A 4xx the HTTP framework raised that no entry above names (a status of its own):
 * `invalid_request`, with that status.
 */
export function frameworkClientError(status: number, message: string): ApiError {
  return new ApiError(status, Errors.invalidRequest.code, message);
}

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
