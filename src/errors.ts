/**
 * The one catalogue of API errors. Each factory has exactly one `error` code and one HTTP
 * status (PROTOCOL 2); the HTTP error handler maps an ApiError to the response, so the status
 * in the body can never differ from the HTTP status. Domain code throws these; it knows
 * nothing of the HTTP framework.
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

const make =
  (status: number, code: string, always?: Record<string, string>) =>
  (message: string, headers?: Record<string, string>): ApiError =>
    new ApiError(status, code, message, always ? { ...always, ...headers } : headers);

// A 401 names the scheme that would be accepted (RFC 9110 15.5.2).
const SIGNATURE_CHALLENGE = { 'www-authenticate': 'SEAYOO-HMAC-SHA256' };
const BEARER_CHALLENGE = { 'www-authenticate': 'Bearer' };

export const Errors = {
  invalidRequest: make(400, 'invalid_request'),
  bodyTooLarge: make(413, 'invalid_request'),
  invalidSignature: make(401, 'invalid_signature', SIGNATURE_CHALLENGE),
  unauthorized: make(401, 'unauthorized', BEARER_CHALLENGE),
  invalidToken: make(401, 'invalid_token'),
  /** An operator whose role or scope does not allow the action (operators.md 1), or a cookie-signed write without its CSRF token. */
  forbidden: make(403, 'forbidden'),
  /** Sign-in with a password is right but the account needs its TOTP code. */
  totpRequired: make(401, 'totp_required'),
  gameIapDisabled: make(403, 'game_iap_disabled'),
  accountBanned: make(403, 'account_banned'),
  rechargeLimitExceeded: make(403, 'recharge_limit_exceeded'),
  partnerDisabled: make(403, 'partner_disabled'),
  channelUnavailable: make(403, 'channel_unavailable'),
  notFound: make(404, 'not_found'),
  bindingNotFound: make(404, 'binding_not_found'),
  roleNotFound: make(404, 'role_not_found'),
  methodNotAllowed: make(405, 'method_not_allowed'),
  conflict: make(409, 'conflict'),
  unsupportedMediaType: make(415, 'unsupported_media_type'),
  duplicateReferenceId: make(422, 'duplicate_reference_id'),
  paymentRejected: make(422, 'payment_rejected'),
  invalidState: make(409, 'invalid_state'),
  rateLimited: make(429, 'rate_limited'),
  internal: make(500, 'internal_error'),
  notImplemented: make(501, 'not_implemented'),
  serviceUnavailable: make(503, 'service_unavailable'),
} as const;

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}
