import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors, type ApiError } from '../errors.js';
import { isPromise, type MaybePromise } from '../lib/maybe-promise.js';
import { bodyMayFollow } from './body-presence.js';
import { prepareBody, readUnwantedBody, screenBodyHeaders, screenUnwantedBody } from './body.js';
import type { AllowedMethods } from './connect.js';
import { sendError } from './error-response.js';
import { originForm } from './request-target.js';
import { routeOf, type AuthKind } from './route-info.js';

export interface AppHooks {
  /**
   * Runs the auth check for a route's `config.auth`; throws an ApiError on failure. Returns a
   * promise only when it has to wait (a caller's keys not in memory).
   */
  authenticate(req: FastifyRequest, kind: AuthKind): void | Promise<void>;
  /**
   * The part of `authenticate` that needs only the headers, run before the body is read (after
   * the 404/405, 415 and 413 checks): a request that cannot be authorized is answered without
   * waiting for a body. Throws an ApiError; returns a promise only when it has to wait.
   */
  screen?(req: FastifyRequest, kind: AuthKind): void | Promise<void>;
  /** True while the service drains for shutdown: new requests get 503. */
  isDraining(): boolean;
  /** Rate limit (PROTOCOL 2): after the signature, before caller-state checks; throws 429. */
  rateLimit?(req: FastifyRequest, reply: FastifyReply, kind: AuthKind): void | Promise<void>;
}

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** Answers of routes with `cors`: readable by pages of any origin, a 429's Retry-After too. */
const CORS_HEADERS = { 'access-control-allow-origin': '*', 'access-control-expose-headers': 'retry-after, x-trace-id' };

/**
 * The required check order (PROTOCOL 2), as Fastify hooks: draining (503), method (404/405),
 * media type (415), size (413), the headers-only auth screen, then after the body is read:
 * signature (401), rate limit (429), caller state (403), parameters and body (400).
 * Returns the methods each path is served with (for CONNECT's answer).
 */
export function installCheckOrder(app: FastifyInstance, hooks: AppHooks): AllowedMethods {
  // Every route path with the methods it answers, to tell 405 (known path) from 404.
  const routes = new Map<string, Set<string>>();
  app.addHook('onRoute', (r) => {
    const methods = routes.get(r.url) ?? new Set<string>();
    for (const m of [r.method].flat()) methods.add(m);
    routes.set(r.url, methods);
  });

  // Callback-style hooks where nothing is awaited: an async hook costs a promise per request.
  app.addHook('onRequest', (req, reply, done) => {
    let pending: MaybePromise<void>;
    try {
      screenRequest(req, reply);
      pending = hooks.screen?.(req, routeOf(req).config.auth ?? 'none');
    } catch (e) {
      return done(e as Error);
    }
    if (isPromise(pending)) pending.then(() => done(), done);
    else done();
  });
  const screenRequest = (req: FastifyRequest, reply: FastifyReply): void => {
    reply.header('x-trace-id', req.id);
    if (routeOf(req).config.cors) reply.headers(CORS_HEADERS);
    if (hooks.isDraining()) throw Errors.serviceUnavailable('the service is shutting down; retry on another instance');
    // An unmatched request is answered here, before its body is read or parsed, so 404/405
    // win over 413 and over the body checks of preValidation.
    if (req.is404) throw unmatched(req);
    screenBodyHeaders(req, reply);
  };

  // PROTOCOL 2 order: signature (401) -> rate limit (429) -> caller state (403) -> body (400).
  // Each step may return a promise; the hook waits only for those that do (most requests find
  // their caller in memory and never wait), so a request costs no promise per step.
  const step = (i: number, req: FastifyRequest, reply: FastifyReply): void | Promise<void> => {
    const cfg = routeOf(req).config;
    switch (i) {
      case 0:
        // A GET's body is never read by Fastify; the signature covers it all the same.
        if (req.rawBody === null && (req.method === 'GET' || req.method === 'HEAD') && bodyMayFollow(req.raw)) {
          return readUnwantedBody(req).then(() => {
            // Over HTTP/2 a body may come without a length: its media type is known only now.
            if ((req.rawBody as Buffer).length > 0) screenUnwantedBody(req);
            return hooks.authenticate(req, cfg.auth ?? 'none');
          });
        }
        return hooks.authenticate(req, cfg.auth ?? 'none');
      case 1:
        return hooks.rateLimit?.(req, reply, cfg.auth ?? 'none');
      case 2:
        return cfg.precheck?.(req);
      default:
        return prepareBody(req);
    }
  };
  const runSteps = (from: number, req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    for (let i = from; i < 4; i++) {
      let pending: MaybePromise<void>;
      try {
        pending = step(i, req, reply);
      } catch (e) {
        return done(e as Error);
      }
      if (isPromise(pending)) {
        pending.then(() => runSteps(i + 1, req, reply, done), done);
        return;
      }
    }
    done();
  };
  app.addHook('preValidation', (req, reply, done) => runSteps(0, req, reply, done));

  const unmatched = (req: FastifyRequest): ApiError => {
    const path = originForm(req.url).split('?')[0] as string;
    const allowed = findAllowedMethods(routes, path);
    return allowed
      ? Errors.methodNotAllowed(`${req.method} is not allowed on ${path}; use ${allowed.join(', ')}`, { allow: allowed.join(', ') })
      : Errors.notFound(`no endpoint at ${path}`);
  };
  app.setNotFoundHandler((req, reply) => sendError(reply, unmatched(req)));
  return (path) => findAllowedMethods(routes, path);
}

function findAllowedMethods(routes: Map<string, Set<string>>, path: string): string[] | null {
  const allowed = new Set<string>();
  for (const [url, methods] of routes) if (matchesPattern(url, path)) for (const m of methods) allowed.add(m);
  const list = ALL_METHODS.filter((m) => allowed.has(m));
  return list.length ? list : null;
}

function matchesPattern(pattern: string, path: string): boolean {
  const p = pattern.split('/');
  const a = path.split('/');
  if (p.length !== a.length && !pattern.endsWith('*')) return false;
  return p.every((seg, i) => seg === '*' || seg.startsWith(':') || seg === a[i]);
}
