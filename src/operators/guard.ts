import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import { routeOf, type AuthKind } from '../http/route-info.js';
import { ACCESS_RULES, checkRole, checkScope, ruleKey, type GameLookups } from './access.js';
import type { Principal } from './roles.js';
import { sameSecret } from './secrets.js';
import type { SignInService } from './sign-in.js';

const principals = new WeakMap<FastifyRequest, Principal>();
const csrfTokens = new WeakMap<FastifyRequest, string>();

/** Who made an authenticated operator request (set by the guard); undefined on other routes. */
export const principalOf = (req: FastifyRequest): Principal | undefined => principals.get(req);
/** The CSRF token of the request's console session, when it came with one. */
export const csrfTokenOfRequest = (req: FastifyRequest): string | null => csrfTokens.get(req) ?? null;

/** ADMIN_TOKEN: the bootstrap and break-glass owner (operators.md 1). */
export const TOKEN_PRINCIPAL: Principal = { kind: 'token', actor: 'ADMIN_TOKEN', role: 'owner', games: null, operatorId: null, sessionId: null };

export interface CookieSettings {
  /** OPERATOR_COOKIE_SECURE: the cookie is marked Secure (and named __Host-...). */
  secure: boolean;
}

export const sessionCookieName = (c: CookieSettings): string => (c.secure ? '__Host-combo_session' : 'combo_session');

export function sessionCookie(c: CookieSettings, value: string, clear = false): string {
  return `${sessionCookieName(c)}=${clear ? '' : value}; Path=/; HttpOnly; SameSite=Strict${c.secure ? '; Secure' : ''}${clear ? '; Max-Age=0' : ''}`;
}

/** One cookie's value from the request's Cookie header(s). */
export function readCookie(req: FastifyRequest, name: string): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

export interface GuardOptions {
  signIn: SignInService;
  cookie: CookieSettings;
  /** The ADMIN_TOKEN check with its guessing limit (http/bearer-guard.ts); null: ADMIN_TOKEN_DISABLED. */
  adminToken: ((req: FastifyRequest) => void | Promise<void>) | null;
  /** Counts a wrong API key against the address (the ADMIN_TOKEN guess bucket); throws 429 past it. */
  wrongKey(req: FastifyRequest): Promise<void>;
  lookups: GameLookups;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The operator routes' guard: who the caller is (401), whether its role allows the route (403),
 * and for a console session's writes its CSRF token (403). Run as the `admin` auth step.
 */
export function operatorGuard(o: GuardOptions): (req: FastifyRequest) => Promise<void> {
  return async (req) => {
    const principal = await identify(o, req);
    principals.set(req, principal);
    const route = routeOf(req);
    const key = ruleKey(req.method === 'HEAD' ? 'GET' : req.method, route.url ?? '');
    checkRole(principal, ACCESS_RULES[key], key);
  };
}

async function identify(o: GuardOptions, req: FastifyRequest): Promise<Principal> {
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    const m = /^Bearer[ \t]+(ak_\S+)$/i.exec(authorization);
    if (m) {
      const p = await o.signIn.apiKeyPrincipal(m[1] as string);
      if (p) return p;
      await o.wrongKey(req);
      throw Errors.unauthorized('API key is not valid (unknown, revoked or expired)');
    }
    if (!o.adminToken) throw Errors.unauthorized('ADMIN_TOKEN is turned off (ADMIN_TOKEN_DISABLED): use an API key or a console session');
    await o.adminToken(req);
    return TOKEN_PRINCIPAL;
  }
  const cookie = readCookie(req, sessionCookieName(o.cookie));
  if (!cookie) throw Errors.unauthorized('Authorization: Bearer <ADMIN_TOKEN or API key>, or a console session, is required');
  const found = await o.signIn.sessionPrincipal(cookie);
  if (!found) throw Errors.unauthorized('the console session has ended (signed out, revoked or idle too long): sign in again');
  csrfTokens.set(req, found.csrfToken);
  if (!SAFE_METHODS.has(req.method)) {
    const sent = req.headers['x-csrf-token'];
    if (typeof sent !== 'string' || !sameSecret(sent, found.csrfToken)) throw Errors.forbidden('X-CSRF-Token is missing or wrong (GET /admin/v1/me gives it)');
  }
  return found.principal;
}

/**
 * The scope check (404 outside an account's games), after validation, and the games listing
 * cut to an account's games. Attached to the operator routes only (other routes get no hook,
 * so no extra promise on their path, and an unmatched request's 404 is written at once).
 * Installed before any route is registered.
 */
export function installScopeHooks(app: FastifyInstance, lookups: GameLookups): void {
  const checkScopeHook = async (req: FastifyRequest): Promise<void> => {
    const principal = principals.get(req);
    if (!principal || principal.games === null) return;
    const rule = ACCESS_RULES[ruleKey(req.method === 'HEAD' ? 'GET' : req.method, routeOf(req).url ?? '')];
    if (!rule) throw Errors.internal('no access rule for this route');
    await checkScope(principal, rule, { params: req.params as Record<string, string>, query: req.query as Record<string, unknown>, body: req.body }, lookups);
  };
  const cutGames = async (req: FastifyRequest, _reply: FastifyReply, payload: unknown): Promise<unknown> => {
    const principal = principals.get(req);
    const page = payload as { data?: { game_id: string }[] };
    if (!principal || principal.games === null || !Array.isArray(page.data)) return payload;
    return { ...page, data: page.data.filter((g) => principal.games!.includes(g.game_id)) };
  };
  app.addHook('onRoute', (route) => {
    if ((route.config as { auth?: AuthKind } | undefined)?.auth !== 'admin') return;
    route.preHandler = [...hooksOf(route.preHandler), checkScopeHook];
    const method = [route.method].flat()[0] === 'HEAD' ? 'GET' : String([route.method].flat()[0]);
    if (ACCESS_RULES[ruleKey(method, route.url)]?.scope === 'games') route.preSerialization = [...hooksOf(route.preSerialization), cutGames];
  });
}

/** A route's own hooks of one kind, as a list. */
function hooksOf<T>(h: T | T[] | undefined): T[] {
  return h === undefined ? [] : Array.isArray(h) ? h : [h];
}
