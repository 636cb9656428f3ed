import { createHmac, hash, timingSafeEqual } from 'node:crypto';

/** SEAYOO-HMAC-SHA256 request signing (PROTOCOL 1), shared by both directions. */
export const SCHEME = 'SEAYOO-HMAC-SHA256';
export const MAX_SKEW_MS = 300_000;
export const EMPTY_BODY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

const TS_RE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

export type Principal = { kind: 'game' | 'partner'; id: string };

export interface ParsedAuthorization {
  principal: Principal;
  timestamp: string;
  signature: string;
}

/** Formats a Unix ms time as the signing timestamp `YYYYMMDDTHHMMSSZ`. */
export function formatTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');
}

/** Parses a signing timestamp to Unix ms, or null when it is not a real UTC time. */
export function parseTimestamp(ts: string): number | null {
  const m = TS_RE.exec(ts);
  if (!m) return null;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  // Reject values Date.UTC would silently roll over (month 13, day 31 of a short month, ...).
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return null;
  if (d > new Date(Date.UTC(y, mo, 0)).getUTCDate()) return null;
  return Date.UTC(y, mo - 1, d, h, mi, s);
}

export function sha256Hex(body: Uint8Array | string): string {
  // One-shot: no Hash object per request.
  return hash('sha256', body, 'hex');
}

export function stringToSign(method: string, uri: string, timestamp: string, bodySha256: string): string {
  return `${SCHEME}\n${method.toUpperCase()}\n${uri}\n${timestamp}\n${bodySha256}`;
}

export function computeSignature(secret: string, method: string, uri: string, timestamp: string, body: Uint8Array | string): string {
  return createHmac('sha256', secret).update(stringToSign(method, uri, timestamp, sha256Hex(body))).digest('hex');
}

/** Builds the Authorization header value a Combo SDK would send. */
export function authorizationHeader(
  principal: Principal,
  secret: string,
  method: string,
  uri: string,
  body: Uint8Array | string,
  nowMs = Date.now(),
): string {
  const ts = formatTimestamp(nowMs);
  const sig = computeSignature(secret, method, uri, ts, body);
  const name = principal.kind === 'game' ? 'Game' : 'Partner';
  return `${SCHEME} ${name}=${principal.id},Timestamp=${ts},Signature=${sig}`;
}

const MALFORMED = 'malformed Authorization parameter';

/**
 * Parses an Authorization header. Parameters are comma separated, whitespace around names and
 * values is ignored, a value may be double-quoted, unknown parameters are ignored (PROTOCOL 1).
 * As RFC 9110's list rule asks of a recipient, empty list elements (a trailing comma, `,,`) are
 * skipped. The four known parameters must each appear at most once, named and with `=`.
 * Returns a reason string when the header is unusable.
 */
export function parseAuthorization(header: string | undefined): ParsedAuthorization | string {
  if (!header) return 'missing Authorization header';
  const space = schemeEnd(header);
  const scheme = space < 0 ? '' : header.slice(0, space);
  // Schemes are case-insensitive (RFC 9110 11.1); the exact spelling is the common case.
  if (scheme !== SCHEME && scheme.toUpperCase() !== SCHEME) return `Authorization scheme must be ${SCHEME}`;
  // One pass over the parameters, the four known ones kept in variables: this runs on every
  // signed request, and splitting the header into a Map of strings costs several times more.
  let game: string | undefined;
  let partner: string | undefined;
  let timestamp: string | undefined;
  let signature: string | undefined;
  for (let at = space + 1; at <= header.length; ) {
    let comma = header.indexOf(',', at);
    if (comma < 0) comma = header.length;
    const eq = header.indexOf('=', at);
    const named = eq >= 0 && eq < comma;
    const name = header.slice(at, named ? eq : comma).trim();
    let value = named ? header.slice(eq + 1, comma).trim() : '';
    if (value.length >= 2 && value.charCodeAt(0) === 34 && value.charCodeAt(value.length - 1) === 34) value = value.slice(1, -1);
    at = comma + 1;
    const known = knownParameter(name);
    if (known === GAME) {
      if (game !== undefined || !named) return MALFORMED;
      game = value;
    } else if (known === PARTNER) {
      if (partner !== undefined || !named) return MALFORMED;
      partner = value;
    } else if (known === TIMESTAMP) {
      if (timestamp !== undefined || !named) return MALFORMED;
      timestamp = value;
    } else if (known === SIGNATURE) {
      if (signature !== undefined || !named) return MALFORMED;
      signature = value;
    } else if (!name && named) {
      // `=value` with no name is a broken parameter, not an unknown one.
      return MALFORMED;
    }
    // Anything else is an empty list element or an unknown parameter: ignored.
  }
  if ((game === undefined) === (partner === undefined)) return 'Authorization needs exactly one of Game= or Partner=';
  const id = (game ?? partner) as string;
  if (!id) return 'Authorization has an empty caller id';
  if (!timestamp) return 'Authorization is missing Timestamp';
  if (!signature || !isLowerHex64(signature)) return 'Authorization Signature must be 64 lower-case hex characters';
  return { principal: { kind: game !== undefined ? 'game' : 'partner', id }, timestamp, signature };
}

const GAME = 0;
const PARTNER = 1;
const TIMESTAMP = 2;
const SIGNATURE = 3;

/**
 * Which of the four known parameters `name` is, or -1. Parameter names are case-insensitive
 * (RFC 9110 11.2); the SDKs' spelling is matched without building a string.
 */
function knownParameter(name: string): number {
  switch (name) {
    case 'Game':
      return GAME;
    case 'Partner':
      return PARTNER;
    case 'Timestamp':
      return TIMESTAMP;
    case 'Signature':
      return SIGNATURE;
  }
  if (name.length < 4 || name.length > 9) return -1;
  switch (name.toLowerCase()) {
    case 'game':
      return GAME;
    case 'partner':
      return PARTNER;
    case 'timestamp':
      return TIMESTAMP;
    case 'signature':
      return SIGNATURE;
  }
  return -1;
}

/** Where the scheme ends: at the first space or tab (whitespace before the parameters is ignored). */
function schemeEnd(header: string): number {
  for (let i = 0; i < header.length; i++) {
    const c = header.charCodeAt(i);
    if (c === 32 || c === 9) return i;
  }
  return -1;
}

/**
 * /^[0-9a-f]{64}$/ as a loop: it runs on every signed request, and the loop costs about a
 * third of the regular expression.
 */
function isLowerHex64(s: string): boolean {
  if (s.length !== 64) return false;
  for (let i = 0; i < 64; i++) {
    const c = s.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

/** Constant-time check of a signature against each candidate key (two during rotation). */
export function signatureMatches(...args: Parameters<typeof matchingKey>): boolean {
  return matchingKey(...args) >= 0;
}

/**
 * Which of the candidate keys made the signature (its index), or -1. Every key is evaluated, so
 * timing reveals neither whether nor which one matched.
 */
export function matchingKey(
  secrets: readonly string[],
  signatureHex: string,
  method: string,
  uri: string,
  timestamp: string,
  bodySha256: string,
): number {
  const given = Buffer.from(signatureHex, 'hex');
  const sts = stringToSign(method, uri, timestamp, bodySha256);
  let matched = -1;
  for (let i = 0; i < secrets.length; i++) {
    const expected = createHmac('sha256', secrets[i] as string).update(sts).digest();
    if (expected.length === given.length && timingSafeEqual(expected, given)) matched = i;
  }
  return matched;
}

/** Checks the timestamp window; returns a reason or null. */
export function checkTimestamp(timestamp: string, nowMs: number): string | null {
  const ts = parseTimestampCached(timestamp);
  if (ts === null) return 'Authorization Timestamp must be YYYYMMDDTHHMMSSZ';
  if (Math.abs(nowMs - ts) > MAX_SKEW_MS) return 'Authorization Timestamp is more than 300 s from the server clock';
  return null;
}

// Requests signed in the same second carry the same timestamp: parse each distinct one once.
let lastTimestamp = '';
let lastParsed: number | null = null;

function parseTimestampCached(timestamp: string): number | null {
  if (timestamp !== lastTimestamp) {
    lastParsed = parseTimestamp(timestamp);
    lastTimestamp = timestamp;
  }
  return lastParsed;
}
