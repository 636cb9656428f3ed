import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { Errors, type ApiError } from '../errors.js';
import { checkTimestamp, parseAuthorization, sha256Hex, matchingKey, EMPTY_BODY_SHA256, type ParsedAuthorization } from '../signing/signer.js';
import { isPromise, type MaybePromise } from '../lib/maybe-promise.js';
import { GameId } from '../games/schemas.js';
import { PartnerId } from '../partners/schemas.js';
import { originForm } from './request-target.js';

/** What a signed caller resolves to: its record and its active secret keys. */
export interface SignedCaller<T> {
  record: T;
  secrets: string[];
  /**
   * Told which of `secrets` signed a verified request (its index); a promise when it has
   * something to store first (the request waits for it).
   */
  keyUsed?(record: T, index: number): MaybePromise<void>;
}

export interface CallerDirectory<G, P> {
  /** A plain value when the caller is in memory: the common case needs no promise. */
  game(gameId: string): MaybePromise<SignedCaller<G> | null>;
  partner(partnerId: string): MaybePromise<SignedCaller<P> | null>;
}

function authorizationHeader(req: FastifyRequest, refuse: (message: string) => ApiError): string | undefined {
  // Node keeps only the first of duplicated Authorization headers; a request carrying two is
  // ambiguous, so it is refused (with the caller kind's own 401) rather than silently half-read.
  const raw = req.raw.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++;
  }
  if (count > 1) throw refuse('Authorization header must appear once');
  const h = req.headers.authorization;
  return Array.isArray(h) ? undefined : h;
}

/** Whether `id` is one a game or partner can have (the GameId and PartnerId schemas). */
const CALLER_IDS = { game: idCheck(GameId), partner: idCheck(PartnerId) };

function idCheck(schema: object): (id: string) => boolean {
  const { pattern: source, maxLength } = schema as { pattern: string; maxLength: number };
  const pattern = new RegExp(source);
  return (id) => id.length <= maxLength && pattern.test(id);
}

/** What screenSignedRequest found in a request's headers, for verifySignedRequest to finish. */
interface Screened {
  parsed: ParsedAuthorization;
  caller: SignedCaller<unknown>;
}

/**
 * The checks of a SEAYOO-HMAC-SHA256 request that need only its headers, run before its body
 * is read: an Authorization that is missing, malformed, of the wrong kind, outside the time
 * window, or naming no known game or partner is refused (401) at once, so that such a request
 * never waits for its body (a client sending bodies slowly would hold the service's places).
 * The signature itself, which covers the body, is checked by verifySignedRequest.
 */
export function screenSignedRequest<G, P>(req: FastifyRequest, directory: CallerDirectory<G, P>, expected: 'game' | 'partner', nowMs: number): MaybePromise<void> {
  const parsed = parseHeaders(req, expected, nowMs);
  const caller = lookUp(directory, expected, parsed);
  const keep = (c: SignedCaller<unknown> | null): void => {
    // The same answer as a wrong signature: the signature cannot match an unknown caller.
    if (!c) throw Errors.invalidSignature('signature does not match');
    req.screened = { parsed, caller: c } satisfies Screened;
  };
  return isPromise(caller) ? caller.then(keep) : keep(caller);
}

/**
 * Verifies a SEAYOO-HMAC-SHA256 request (PROTOCOL 1) and returns the caller: synchronously when
 * the caller's keys are in memory (or its headers were screened), else once they are loaded.
 */
export function verifySignedRequest<G, P>(
  req: FastifyRequest,
  directory: CallerDirectory<G, P>,
  expected: 'game' | 'partner',
  nowMs: number,
): MaybePromise<SignedCaller<G> | SignedCaller<P>> {
  const seen = req.screened as Screened | null | undefined;
  if (seen) return checkSignature(req, seen.parsed, seen.caller as SignedCaller<G> | SignedCaller<P>);
  const parsed = parseHeaders(req, expected, nowMs);
  const caller = lookUp(directory, expected, parsed);
  return isPromise(caller) ? caller.then((c) => checkSignature(req, parsed, c)) : checkSignature(req, parsed, caller);
}

function parseHeaders(req: FastifyRequest, expected: 'game' | 'partner', nowMs: number): ParsedAuthorization {
  const parsed = parseAuthorization(authorizationHeader(req, Errors.invalidSignature));
  if (typeof parsed === 'string') throw Errors.invalidSignature(parsed);
  if (parsed.principal.kind !== expected) {
    throw Errors.invalidSignature(`Authorization must name the ${expected === 'game' ? 'Game' : 'Partner'}`);
  }
  const skew = checkTimestamp(parsed.timestamp, nowMs);
  if (skew) throw Errors.invalidSignature(skew);
  // An id no game or partner can have is not looked up (nor remembered as unknown): anyone can
  // send such requests, with ids up to the header's size.
  if (!CALLER_IDS[expected](parsed.principal.id)) throw Errors.invalidSignature(`Authorization names no ${expected === 'game' ? 'game' : 'partner'} that can exist`);
  return parsed;
}

function lookUp<G, P>(directory: CallerDirectory<G, P>, expected: 'game' | 'partner', parsed: ParsedAuthorization): MaybePromise<SignedCaller<G> | SignedCaller<P> | null> {
  return expected === 'game' ? directory.game(parsed.principal.id) : directory.partner(parsed.principal.id);
}

function checkSignature<C extends SignedCaller<unknown>>(req: FastifyRequest, parsed: ParsedAuthorization, caller: C | null): MaybePromise<C> {
  const bodyHash = req.rawBody && req.rawBody.length > 0 ? sha256Hex(req.rawBody) : EMPTY_BODY_SHA256;
  // An unknown caller is checked against a dummy key, so both failures take the same time.
  const secrets = caller?.secrets.length ? caller.secrets : ['sk_unknown_caller'];
  const index = matchingKey(secrets, parsed.signature, req.method, originForm(req.url), parsed.timestamp, bodyHash);
  if (!caller || index < 0) throw Errors.invalidSignature('signature does not match');
  const noted = caller.keyUsed?.(caller.record, index);
  return isPromise(noted) ? noted.then(() => caller) : caller;
}

/** A bearer token check (ADMIN_TOKEN, METRICS_TOKEN), in constant time. */
export function verifyBearer(req: FastifyRequest, token: BearerToken): void {
  const refusal = bearerRefusal(req, token);
  if (refusal) throw refusal.error();
}

/** A token the service expects as `Authorization: Bearer <token>`, and what it is called in answers. */
export interface BearerToken {
  value: string;
  /** `admin token`, `METRICS_TOKEN`: named in the answer to a request without it. */
  name: string;
  /** Why the request was refused, when its token is wrong (made only when thrown). */
  wrong: Refusal;
}

export interface Refusal {
  error: () => ApiError;
  /** A token was presented and it is wrong. */
  guess: boolean;
}

export const bearerToken = (value: string, name: string, wrongMessage: string): BearerToken => ({
  value,
  name,
  wrong: { error: () => Errors.unauthorized(wrongMessage), guess: true },
});

/**
 * Why a request is refused, or null when its bearer token is `token` (compared in constant
 * time). The error is made only when it is thrown: a wrong token that is answered 429 instead
 * must cost what the right one does (bearer-guard.ts).
 */
export function bearerRefusal(req: FastifyRequest, token: BearerToken): Refusal | null {
  const h = authorizationHeader(req, Errors.unauthorized);
  // The scheme is case-insensitive (RFC 9110 11.1).
  const m = h ? /^Bearer[ \t]+(.+)$/i.exec(h) : null;
  if (!m) return { error: () => Errors.unauthorized(`Authorization: Bearer <${token.name}> is required`), guess: false };
  // Hashing both sides gives equal lengths, so the comparison is constant-time.
  const a = createHash('sha256').update(m[1] as string).digest();
  const b = createHash('sha256').update(token.value).digest();
  return timingSafeEqual(a, b) ? null : token.wrong;
}
