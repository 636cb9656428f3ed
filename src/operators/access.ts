import { Errors } from '../errors.js';
import { hasRole, inScope, type Principal, type Role } from './roles.js';

/**
 * How a route's game is found, to check an account's scope (operators.md 1: out of scope reads
 * as 404, the route's own answer for a missing one):
 * - `game`: the `:game_id` path parameter; `order`, `notification`: the game of the order or
 *   notification the path names;
 * - `body`: the body's `game_id`;
 * - `list`: a listing's `game_id` filter: an account limited to one game has it filled in, one
 *   limited to several must give it (400 otherwise); the audit log is such a listing (an entry
 *   about no game is read only by accounts of every game);
 * - `games`: the games listing, which shows an account only its own;
 * - `global`: not about one game (partners, operators, API keys): an account
 *   limited to some games is refused (403);
 * - `self`: the caller's own account (me, sign-out).
 */
export type ScopeKind = 'game' | 'order' | 'notification' | 'body' | 'list' | 'games' | 'global' | 'self';

export interface AccessRule {
  role: Role;
  scope: ScopeKind;
}

const rule = (role: Role, scope: ScopeKind): AccessRule => ({ role, scope });

/**
 * Every operator route (`config.auth: 'admin'`), by `METHOD url`, with the least role that may
 * call it and how its scope is checked. A route missing here is refused to everyone (500) and
 * fails test/operators-access.test.ts: a new operator route needs its rule.
 */
export const ACCESS_RULES: Readonly<Record<string, AccessRule>> = {
  'POST /admin/v1/games': rule('admin', 'global'),
  'GET /admin/v1/games': rule('viewer', 'games'),
  'GET /admin/v1/games/:game_id': rule('viewer', 'game'),
  'PATCH /admin/v1/games/:game_id': rule('developer', 'game'),
  'POST /admin/v1/games/:game_id/keys': rule('developer', 'game'),
  'DELETE /admin/v1/games/:game_id/keys/:key_id': rule('developer', 'game'),
  'PUT /admin/v1/games/:game_id/products/:product_id': rule('developer', 'game'),
  'GET /admin/v1/games/:game_id/products/:product_id': rule('viewer', 'game'),
  'GET /admin/v1/games/:game_id/products': rule('viewer', 'game'),
  'GET /admin/v1/games/:game_id/channels': rule('viewer', 'game'),
  'GET /admin/v1/games/:game_id/channels/:channel': rule('viewer', 'game'),
  'DELETE /admin/v1/games/:game_id/channels/:channel': rule('developer', 'game'),
  'PUT /admin/v1/games/:game_id/channels/sandbox': rule('developer', 'game'),
  'PUT /admin/v1/games/:game_id/channels/apple': rule('developer', 'game'),
  'PUT /admin/v1/games/:game_id/channels/google': rule('developer', 'game'),
  'PUT /admin/v1/games/:game_id/channels/alipay': rule('developer', 'game'),
  'PUT /admin/v1/games/:game_id/channels/wechat': rule('developer', 'game'),
  'POST /admin/v1/games/:game_id/notifications/redeliver': rule('support', 'game'),
  'PUT /admin/v1/games/:game_id/players/:combo_id': rule('admin', 'game'),
  'GET /admin/v1/games/:game_id/players/:combo_id': rule('viewer', 'game'),
  'GET /admin/v1/games/:game_id/nppa/events': rule('viewer', 'game'),
  'GET /admin/v1/orders': rule('viewer', 'list'),
  'GET /admin/v1/orders.csv': rule('viewer', 'list'),
  'GET /admin/v1/orders/:order_id': rule('viewer', 'order'),
  'POST /admin/v1/orders/:order_id/refund': rule('finance', 'order'),
  'POST /admin/v1/orders/:order_id/cancel': rule('support', 'order'),
  'GET /admin/v1/payments': rule('viewer', 'list'),
  'POST /admin/v1/reconciliations': rule('finance', 'body'),
  'GET /admin/v1/reconciliations': rule('viewer', 'list'),
  'GET /admin/v1/sessions': rule('viewer', 'list'),
  'GET /admin/v1/bindings': rule('viewer', 'list'),
  'GET /admin/v1/notifications': rule('viewer', 'list'),
  'GET /admin/v1/notifications/:notification_id': rule('viewer', 'notification'),
  'POST /admin/v1/notifications/:notification_id/redeliver': rule('support', 'notification'),
  'POST /admin/v1/notifications/:notification_id/retry': rule('support', 'notification'),
  'POST /admin/v1/games/:game_id/notifications/retry': rule('support', 'game'),
  'GET /admin/v1/games/:game_id/delivery-health': rule('viewer', 'game'),
  'POST /admin/v1/partners': rule('admin', 'global'),
  'GET /admin/v1/partners': rule('viewer', 'global'),
  'GET /admin/v1/partners/:partner_id': rule('viewer', 'global'),
  'PATCH /admin/v1/partners/:partner_id': rule('admin', 'global'),
  'POST /admin/v1/partners/:partner_id/keys': rule('admin', 'global'),
  'DELETE /admin/v1/partners/:partner_id/keys/:key_id': rule('admin', 'global'),
  'GET /admin/v1/audit': rule('viewer', 'list'),
  // The operators domain's own routes.
  'GET /admin/v1/me': rule('viewer', 'self'),
  'DELETE /admin/v1/session': rule('viewer', 'self'),
  'GET /admin/v1/me/sessions': rule('viewer', 'self'),
  'DELETE /admin/v1/me/sessions/:session_id': rule('viewer', 'self'),
  'PUT /admin/v1/me/password': rule('viewer', 'self'),
  'POST /admin/v1/me/totp': rule('viewer', 'self'),
  'POST /admin/v1/me/totp/verify': rule('viewer', 'self'),
  'DELETE /admin/v1/me/totp': rule('viewer', 'self'),
  'POST /admin/v1/operators': rule('admin', 'global'),
  'GET /admin/v1/operators': rule('admin', 'global'),
  'GET /admin/v1/operators/:operator_id': rule('admin', 'global'),
  'PATCH /admin/v1/operators/:operator_id': rule('admin', 'global'),
  'DELETE /admin/v1/operators/:operator_id': rule('admin', 'global'),
  'POST /admin/v1/operators/:operator_id/invitation': rule('admin', 'global'),
  'POST /admin/v1/api-keys': rule('admin', 'global'),
  'GET /admin/v1/api-keys': rule('admin', 'global'),
  'DELETE /admin/v1/api-keys/:key_id': rule('admin', 'global'),
};

export const ruleKey = (method: string, url: string): string => `${method} ${url}`;

/** The role check (403), run with the principal, before the body is read. */
export function checkRole(principal: Principal, r: AccessRule | undefined, key: string): void {
  if (!r) throw Errors.internal(`no access rule for ${key}`);
  if (!hasRole(principal.role, r.role)) throw Errors.forbidden(`this needs the ${r.role} role or higher; this account is ${principal.role}`);
  if (r.scope === 'global' && principal.games !== null) throw Errors.forbidden('an account limited to some games cannot use this');
}

/** What the scope check reads of a request. */
export interface ScopedRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
}

/** Finds the game of an order or notification (null: there is none). */
export interface GameLookups {
  orderGame(orderId: string): Promise<string | null>;
  notificationGame(notificationId: string): Promise<string | null>;
}

/**
 * The scope check (404 outside it) for a principal limited to some games, after the request is
 * validated. A listing without `game_id` gets the account's only game filled in.
 */
export async function checkScope(principal: Principal, r: AccessRule, req: ScopedRequest, lookups: GameLookups): Promise<void> {
  if (principal.games === null) return;
  const outside = (gameId: string | null, message: string): void => {
    if (gameId === null || !inScope(principal, gameId)) throw Errors.notFound(message);
  };
  switch (r.scope) {
    case 'game':
      return outside(req.params.game_id as string, `game ${req.params.game_id} not found`);
    case 'order':
      return outside(await lookups.orderGame(req.params.order_id as string), `order ${req.params.order_id} not found`);
    case 'notification':
      return outside(await lookups.notificationGame(req.params.notification_id as string), `notification ${req.params.notification_id} not found`);
    case 'body': {
      const gameId = (req.body as { game_id?: string }).game_id as string;
      return outside(gameId, `game ${gameId} not found`);
    }
    case 'list': {
      const gameId = req.query.game_id as string | undefined;
      if (gameId !== undefined) return outside(gameId, `game ${gameId} not found`);
      if (principal.games.length !== 1) throw Errors.invalidRequest('game_id is required: this account may read only some games');
      req.query.game_id = principal.games[0];
      return;
    }
    default:
      return;
  }
}
