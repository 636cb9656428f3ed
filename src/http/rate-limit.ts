import type { FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import { isPromise } from '../lib/maybe-promise.js';
import { policyOfCaller, type RateLimiter, type RateLimitPolicy, type TakeResult } from '../ratelimit/limiter.js';
import type { AuthKind } from '../lib/auth-kind.js';

export interface RateLimitHookOptions {
  limiter: RateLimiter;
  /** The request's policy once its caller is known; null: the route is not rate limited. */
  policyFor(req: FastifyRequest, kind: AuthKind): RateLimitPolicy | null;
  /** Told of every refusal (metrics). */
  onLimited?(policy: RateLimitPolicy): void;
}

/**
 * Runs after authentication (PROTOCOL 2: the caller is known) and before caller-state checks.
 * Sets the IETF RateLimit headers on every answer of a limited route and throws 429
 * `rate_limited` with `Retry-After` when the bucket is empty.
 */
export function rateLimitHook(o: RateLimitHookOptions) {
  return (req: FastifyRequest, reply: FastifyReply, kind: AuthKind): void | Promise<void> => {
    const policy = o.policyFor(req, kind);
    if (!policy) return;
    return limit(o, policy, reply);
  };
}

/**
 * Takes one request from `policy`'s bucket: sets the RateLimit headers, or throws 429
 * `rate_limited` with `Retry-After` when the bucket is empty.
 */
export function limit(o: Limits, policy: RateLimitPolicy, reply: FastifyReply): void | Promise<void> {
  const result = o.limiter.take(policy);
  return isPromise(result) ? result.then((r) => apply(o, policy, reply, r)) : apply(o, policy, reply, result);
}

type Limits = Pick<RateLimitHookOptions, 'limiter' | 'onLimited'>;

function apply(o: Limits, policy: RateLimitPolicy, reply: FastifyReply, result: TakeResult): void {
  // Failing open, the service knows nothing true to advertise: no headers rather than made-up ones.
  if (result.degraded) return;
  if (result.allowed) {
    // The common case sets the two headers directly: no intermediate object per request.
    reply.header('ratelimit-policy', listed(reply, 'ratelimit-policy', policyHeader(policy)));
    reply.header('ratelimit', listed(reply, 'ratelimit', remainingHeader(policy, result)));
    return;
  }
  const headers = { 'ratelimit-policy': listed(reply, 'ratelimit-policy', policyHeader(policy)), ratelimit: listed(reply, 'ratelimit', remainingHeader(policy, result)) };
  o.onLimited?.(policy);
  const retryAfter = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
  throw Errors.rateLimited(`over the rate limit of ${policy.perSecond} requests per second; retry after ${retryAfter} s`, {
    ...headers,
    'retry-after': String(retryAfter),
  });
}

/**
 * A bucket's entry after those of the buckets this request drew from before (the client API's
 * per-IP, then per-token; structured-field lists): the client sees each, the emptier included,
 * also when the later one refuses.
 */
function listed(reply: FastifyReply, header: string, entry: string): string {
  const earlier = reply.getHeader(header);
  return earlier === undefined ? entry : `${String(earlier)}, ${entry}`;
}

/*
 * draft-ietf-httpapi-ratelimit-headers-09/-10 (structured fields):
 *   RateLimit-Policy: "<name>";q=<requests>;w=1       the quota: q requests per 1-second window
 *   RateLimit: "<name>";r=<remaining>;t=<seconds>     what is left now, and when it refills
 * <name> is the caller kind (`game`, `partner`, `ip`), never the caller's id.
 */

// A caller's policy object lives as long as its cached snapshot: its header is built once.
const policyHeaders = new WeakMap<RateLimitPolicy, string>();

function policyHeader(policy: RateLimitPolicy): string {
  let h = policyHeaders.get(policy);
  if (h === undefined) {
    h = `"${policyName(policy)}";q=${Math.floor(policy.perSecond)};w=1`;
    policyHeaders.set(policy, h);
  }
  return h;
}

function remainingHeader(policy: RateLimitPolicy, r: TakeResult): string {
  const t = Math.ceil((r.allowed ? r.resetMs : r.retryAfterMs) / 1000);
  // Joined, not a template literal: a template this long is a V8 cons string, and Node's check
  // of each header value (a regular expression) runs a cons string through V8's runtime.
  return ['"', policyName(policy), '";r=', r.remaining, ';t=', Math.max(0, t)].join('');
}

function policyName(policy: RateLimitPolicy): string {
  const colon = policy.key.indexOf(':');
  return (colon < 0 ? policy.key : policy.key.slice(0, colon)) || 'default';
}

/**
 * Which bucket a request draws from: signed callers (games, partners) carry their own policy
 * (RateLimitedCaller, e.g. GameSnapshot.rateLimit); the client purchase API is limited per IP
 * (PROTOCOL 10; req.ip honours TRUST_PROXY), and per order token in its routes (tokenPolicy).
 * Admin and unauthenticated routes are not limited.
 */
export function requestPolicy(clientPerSecond: number) {
  return (req: FastifyRequest, kind: AuthKind): RateLimitPolicy | null => {
    if (kind === 'client') return { key: `ip:${req.ip}`, perSecond: clientPerSecond };
    if (kind === 'game' || kind === 'partner') return policyOfCaller(req.caller);
    return null;
  };
}

/**
 * The client purchase API's second bucket (PROTOCOL 10: per token and per IP): one per order,
 * named by the order id of the token, so guesses at one order's token from many addresses share
 * it. A token that names no order has none (it is refused as invalid_token next).
 */
export function tokenPolicy(orderId: string | null, perSecond: number): RateLimitPolicy | null {
  return orderId === null ? null : { key: `token:${orderId}`, perSecond };
}
