/**
 * operators.md 1: the role table on every operator route, and per-game scope. The routes are
 * read from the running service's route table: a new operator route without a rule in
 * src/operators/access.ts fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listRoutes } from '../src/http/route-table.js';
import { ACCESS_RULES, ruleKey } from '../src/operators/access.js';
import { hasRole, ROLES, type Role } from '../src/operators/roles.js';
import { apiKey, bearer, call } from './helpers/operators.js';
import { createOrder } from './helpers/orders.js';
import { paidOrder } from './helpers/paid-orders.js';
import { ADMIN_TOKEN, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

/** Operator-API paths callable without an operator credential: sign-in (and its options) and invitations. */
const PUBLIC = new Set(['GET /admin/v1/sign-in-options', 'POST /admin/v1/session', 'GET /admin/v1/invitations/:token', 'POST /admin/v1/invitations/:token', 'GET /admin/v1/oidc/start', 'GET /admin/v1/oidc/callback']);
const ROLE_REFUSAL = /^this needs the [a-z]+ role or higher/;

let t: TestService;
const keys = new Map<Role, string>();
beforeAll(async () => {
  t = await startService();
  for (const role of ROLES) keys.set(role, await apiKey(t, role));
}, 180_000);
afterAll(async () => t?.stop());

const operatorRoutes = () => listRoutes(t.service.app).filter((r) => r.url.startsWith('/admin/') || r.auth === 'admin');

/** The route's path with every parameter named by something that does not exist. */
const pathOf = (url: string) => url.replace(/:([a-z_]+)/g, (_m, name: string) => `no-such-${name.replace(/_/g, '-')}`);

describe('the role table', () => {
  it('has a rule for every operator route, and none for a route that is gone', () => {
    const routes = operatorRoutes();
    const missing = routes.filter((r) => r.auth === 'admin' && !ACCESS_RULES[ruleKey(r.method, r.url)]).map((r) => ruleKey(r.method, r.url));
    expect(missing, 'operator routes without an access rule (src/operators/access.ts)').toEqual([]);
    const unguarded = routes.filter((r) => r.auth !== 'admin' && !PUBLIC.has(ruleKey(r.method, r.url))).map((r) => ruleKey(r.method, r.url));
    expect(unguarded, 'routes under /admin/ that take no operator credential').toEqual([]);
    const known = new Set(routes.map((r) => ruleKey(r.method, r.url)));
    expect(Object.keys(ACCESS_RULES).filter((k) => !known.has(k) && !k.includes('/oidc/'))).toEqual([]);
  });

  it('refuses each role below a route’s rule (403) and lets each other role through, on every route', async () => {
    const wrong: string[] = [];
    for (const r of operatorRoutes().filter((x) => x.auth === 'admin')) {
      const rule = ACCESS_RULES[ruleKey(r.method, r.url)]!;
      for (const role of ROLES) {
        const body = ['POST', 'PUT', 'PATCH'].includes(r.method) ? {} : undefined;
        const a = await call(t, r.method, pathOf(r.url), bearer(keys.get(role)!), body);
        const refused = a.status === 403 && ROLE_REFUSAL.test(a.body?.message ?? '');
        if (refused === hasRole(role, rule.role) || a.status === 401 || a.status === 500) wrong.push(`${role} ${r.method} ${r.url}: ${a.status} ${a.text.slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 300_000);

  it('refuses a request without a credential (401) on every operator route', async () => {
    for (const r of operatorRoutes().filter((x) => x.auth === 'admin')) {
      const a = await call(t, r.method, pathOf(r.url), {}, ['POST', 'PUT', 'PATCH'].includes(r.method) ? {} : undefined);
      expect(a.status, `${r.method} ${r.url}`).toBe(401);
    }
  });
});

describe('scope', () => {
  let a: TestGame;
  let b: TestGame;
  let devA: string;
  beforeAll(async () => {
    a = await createGame(t);
    b = await createGame(t);
    devA = await apiKey(t, 'developer', [a.gameId]);
  }, 60_000);
  const asDev = (method: string, path: string, body?: unknown) => call(t, method, path, bearer(devA), body);

  it('a developer of game A reads game B’s order as 404, and its own as 200', async () => {
    const orderA = await createOrder(t, a);
    const orderB = await createOrder(t, b);
    expect((await asDev('GET', `/admin/v1/orders/${orderA.order_id}`)).status).toBe(200);
    const other = await asDev('GET', `/admin/v1/orders/${orderB.order_id}`);
    expect(other.status).toBe(404);
    expect(other.body).toEqual({ error: 'not_found', message: `order ${orderB.order_id} not found` });
    // The same answer as an order that does not exist.
    expect((await asDev('GET', '/admin/v1/orders/9999999')).body.error).toBe('not_found');
    expect((await asDev('POST', `/admin/v1/orders/${orderB.order_id}/cancel`, { reason: 'x' })).status).toBe(404);
  });

  it('game routes, notifications and listings keep to the account’s games', async () => {
    expect((await asDev('GET', `/admin/v1/games/${a.gameId}`)).status).toBe(200);
    expect((await asDev('GET', `/admin/v1/games/${b.gameId}`)).status).toBe(404);
    expect((await asDev('PATCH', `/admin/v1/games/${b.gameId}`, { name: 'x' })).status).toBe(404);
    expect((await asDev('POST', `/admin/v1/games/${b.gameId}/keys`, {})).status).toBe(404);
    const games = await asDev('GET', '/admin/v1/games?limit=200');
    expect(games.body.data.map((g: { game_id: string }) => g.game_id)).toEqual([a.gameId]);
    // A listing without game_id is the account's one game; another game's is 404.
    const orders = await asDev('GET', '/admin/v1/orders?limit=200');
    expect(orders.status).toBe(200);
    expect(new Set(orders.body.data.map((o: { game_id: string }) => o.game_id))).toEqual(new Set([a.gameId]));
    expect((await asDev('GET', `/admin/v1/orders?game_id=${b.gameId}`)).status).toBe(404);
    expect((await asDev('GET', `/admin/v1/notifications?game_id=${b.gameId}`)).status).toBe(404);
    const { notificationId } = await paidOrder(t, b, 'http://127.0.0.1:9/notify', { lockedUntil: Date.now() + 3600_000 });
    expect((await asDev('GET', `/admin/v1/notifications/${notificationId}`)).status).toBe(404);
    const financeA = await apiKey(t, 'finance', [a.gameId]);
    const run = await call(t, 'POST', '/admin/v1/reconciliations', bearer(financeA), { channel: 'wechat', game_id: b.gameId, date: '2026-01-01' });
    expect(run.body).toEqual({ error: 'not_found', message: `game ${b.gameId} not found` });
  });

  it('an account limited to several games must name one in a listing; global routes refuse it (403)', async () => {
    const two = await apiKey(t, 'admin', [a.gameId, b.gameId]);
    const list = await call(t, 'GET', '/admin/v1/orders', bearer(two));
    expect(list.status).toBe(400);
    expect((await call(t, 'GET', `/admin/v1/orders?game_id=${b.gameId}`, bearer(two))).status).toBe(200);
    const partners = await call(t, 'GET', '/admin/v1/partners', bearer(two));
    expect(partners.status).toBe(403);
    expect(partners.body.message).toMatch(/limited to some games/);
  });

  it('a viewer of game A reads the audit log of game A: not game B’s entries, nor those about no game', async () => {
    const viewerA = await apiKey(t, 'viewer', [a.gameId]);
    for (const g of [a, b]) expect((await call(t, 'PATCH', `/admin/v1/games/${g.gameId}`, bearer(ADMIN_TOKEN), { name: 'audited' })).status).toBe(200);
    const mine = await call(t, 'GET', '/admin/v1/audit?limit=200', bearer(viewerA));
    expect(mine.status).toBe(200);
    expect(new Set(mine.body.data.map((e: { game_id: string }) => e.game_id))).toEqual(new Set([a.gameId]));
    expect(mine.body.data.filter((e: { action: string }) => e.action === 'game.update').map((e: { target: string }) => e.target)).toEqual([a.gameId]);
    expect((await call(t, 'GET', `/admin/v1/audit?game_id=${b.gameId}`, bearer(viewerA))).status).toBe(404);
    // An account of every game reads them all, those about no game (the API keys made) too.
    const all = await call(t, 'GET', '/admin/v1/audit?limit=200', bearer(keys.get('viewer')!));
    const games = new Set(all.body.data.map((e: { game_id: string | null }) => e.game_id));
    expect([games.has(a.gameId), games.has(b.gameId), games.has(null)]).toEqual([true, true, true]);
    // One limited to several games names one of them, as in any listing.
    const two = await apiKey(t, 'viewer', [a.gameId, b.gameId]);
    expect((await call(t, 'GET', '/admin/v1/audit', bearer(two))).status).toBe(400);
    const ofB = await call(t, 'GET', `/admin/v1/audit?game_id=${b.gameId}`, bearer(two));
    expect(new Set(ofB.body.data.map((e: { game_id: string }) => e.game_id))).toEqual(new Set([b.gameId]));
  });

  it('ADMIN_TOKEN is an owner of every game', async () => {
    expect((await call(t, 'GET', `/admin/v1/games/${b.gameId}`, bearer(ADMIN_TOKEN))).status).toBe(200);
  });
});
