import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyContextConfig,
  FastifyInstance,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import type { AuthKind } from '../lib/auth-kind.js';

export type { AuthKind } from '../lib/auth-kind.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; checked in preValidation, before the body is parsed. */
    auth?: AuthKind;
    /** Caller-state checks (403) that PROTOCOL 2 runs after the signature, before parameters. */
    precheck?: (req: FastifyRequest) => void | Promise<void>;
    /**
     * Answers web pages of any origin (`Access-Control-Allow-Origin: *`), refusals included:
     * the client API, called by games' web pages, whose credential is in the body (no cookies).
     */
    cors?: boolean;
  }
  interface FastifyRequest {
    rawBody?: Buffer;
    /** The authenticated caller (a game or partner snapshot), set by `authenticate`. */
    caller?: unknown;
    /** This request's route, read once (see routeOf). */
    routeInfo?: RouteInfo;
    /** What the signed-request screen read from the headers, for the signature check (auth.ts). */
    screened?: unknown;
  }
}

/** The router's bound on a path parameter's length (longer: 400 before any hook runs). */
export const MAX_PARAM_LENGTH = 1024;

export type JsonSchema = { type?: string; properties?: Record<string, JsonSchema>; required?: string[] };

/** What the pipeline needs of a request's route. */
export interface RouteInfo {
  /** The route pattern; undefined for an unmatched request. */
  url: string | undefined;
  config: FastifyContextConfig;
  bodySchema: JsonSchema | undefined;
}

/**
 * The request's route, memoized: Fastify's `req.routeOptions` builds a new object on every
 * read, and the pipeline reads it several times per request.
 */
export function routeOf(req: FastifyRequest): RouteInfo {
  let info = req.routeInfo;
  if (!info) {
    const o = req.routeOptions;
    info = { url: o.url, config: o.config, bodySchema: o.schema?.body as JsonSchema | undefined };
    req.routeInfo = info;
  }
  return info;
}

/**
 * The Fastify instance routes are registered on: through the TypeBox type provider, a handler's
 * `req.body`, `req.query` and `req.params` have the static types of the route's schemas.
 */
export type ApiApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, TypeBoxTypeProvider>;
