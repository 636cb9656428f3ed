import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { AdminBinding } from '../src/bindings/schemas.js';
import { ManualClock } from '../src/lib/clock.js';
import { admin, createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';
import { createPartner, FakeGm, partnerGet, queryUri, role, type TestPartner } from './helpers/partners.js';

// Edges of partner-user bindings (PROTOCOL 7, 9) and of partner management (PROTOCOL 11) that
// the main suites (bindings, bindings-partners) leave open: the key of an unbind, replacing a
// binding's combo_id, the operator listing's filters and paging, GM answer shapes, and the
// partner operator API's transaction, cache and audit.

const clock = new ManualClock(Date.now());
const gmKeys = new Map<string, string[]>();
let gm: FakeGm;
let t: TestService;

beforeAll(async () => {
  gm = await new FakeGm(() => gmKeys, () => clock.now()).start();
  t = await startService({ clock, env: { GM_TIMEOUT_MS: '300' } });
});
afterAll(async () => {
  await t?.stop();
  await gm?.stop();
});
afterEach(() => {
  gm.release();
  gm.mode = { kind: 'roles' };
  expect(gm.failures).toEqual([]);
});

let seq = 0;
const uniq = (p: string) => `${p}-${++seq}-${randomBytes(3).toString('hex')}`;

async function gmGame(): Promise<TestGame> {
  const game = await createGame(t, { gm_url: gm.url });
  gmKeys.set(game.gameId, [game.secret]);
  return game;
}

function bind(game: TestGame, partner: TestPartner | string, partnerUserId: string, comboId: string, roleId: string) {
  const partnerId = typeof partner === 'string' ? partner : partner.partnerId;
  return signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partnerId, partner_user_id: partnerUserId, combo_id: comboId, role_id: roleId });
}

function unbind(game: TestGame, partner: TestPartner, partnerUserId: string) {
  return signed(t, game, 'POST', '/v1/server/unbind-partner-user', { partner_id: partner.partnerId, partner_user_id: partnerUserId });
}

/** A row of GET /admin/v1/bindings. */
type Listed = AdminBinding;

async function listAll(query: string, limit: number): Promise<{ rows: Listed[]; pages: { size: number; next: string | null }[] }> {
  const rows: Listed[] = [];
  const pages: { size: number; next: string | null }[] = [];
  let cursor: string | null = null;
  do {
    const r = await admin(t, 'GET', `/admin/v1/bindings?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(r.status).toBe(200);
    rows.push(...r.body.data);
    pages.push({ size: r.body.data.length, next: r.body.next_cursor });
    cursor = r.body.next_cursor;
    if (pages.length > 50) throw new Error('paging does not end');
  } while (cursor);
  return { rows, pages };
}

describe('unbind removes exactly one binding (game, partner, partner_user_id)', () => {
  it('an unbind in one game leaves the same partner user bound in another game', async () => {
    const [g1, g2] = [await gmGame(), await gmGame()];
    const partner = await createPartner(t, [g1.gameId, g2.gameId]);
    const combo = uniq('combo');
    gm.roles.set(combo, [role('r1')]);
    expect((await bind(g1, partner, 'pu', combo, 'r1')).status).toBe(200);
    expect((await bind(g2, partner, 'pu', combo, 'r1')).status).toBe(200);
    expect((await unbind(g1, partner, 'pu')).status).toBe(200);

    const gone = await partnerGet(t, partner, queryUri(g1.gameId, 'pu'));
    expect([gone.status, gone.body.error]).toEqual([404, 'binding_not_found']);
    const kept = await partnerGet(t, partner, queryUri(g2.gameId, 'pu'));
    expect([kept.status, kept.body.role?.role_id]).toEqual([200, 'r1']);
    const listed = await admin(t, 'GET', `/admin/v1/bindings?partner_id=${partner.partnerId}`);
    expect(listed.body.data.map((b: Listed) => [b.game_id, b.partner_user_id])).toEqual([[g2.gameId, 'pu']]);
  });

  it('an unbind for one partner leaves another partner\'s binding of the same partner_user_id', async () => {
    const game = await gmGame();
    const [p1, p2] = [await createPartner(t, [game.gameId]), await createPartner(t, [game.gameId])];
    const combo = uniq('combo');
    gm.roles.set(combo, [role('r1')]);
    expect((await bind(game, p1, 'same-user', combo, 'r1')).status).toBe(200);
    expect((await bind(game, p2, 'same-user', combo, 'r1')).status).toBe(200);
    expect((await unbind(game, p1, 'same-user')).status).toBe(200);

    expect((await partnerGet(t, p1, queryUri(game.gameId, 'same-user'))).status).toBe(404);
    const kept = await partnerGet(t, p2, queryUri(game.gameId, 'same-user'));
    expect([kept.status, kept.body.role?.role_id]).toEqual([200, 'r1']);
    const listed = await admin(t, 'GET', `/admin/v1/bindings?game_id=${game.gameId}`);
    expect(listed.body.data.map((b: Listed) => b.partner_id)).toEqual([p2.partnerId]);
  });
});

describe('binding again replaces the whole binding (PROTOCOL 9)', () => {
  it('a new combo_id replaces the old one: the GM is asked for the new player\'s roles', async () => {
    const game = await gmGame();
    const partner = await createPartner(t, [game.gameId]);
    const [oldCombo, newCombo] = [uniq('old'), uniq('new')];
    gm.roles.set(oldCombo, [role('r1', { role_name: 'old player' })]);
    gm.roles.set(newCombo, [role('r1', { role_name: 'new player' })]);
    expect((await bind(game, partner, 'pu', oldCombo, 'r1')).status).toBe(200);
    clock.advance(1000);
    expect((await bind(game, partner, 'pu', newCombo, 'r1')).status).toBe(200);

    const q = await partnerGet(t, partner, queryUri(game.gameId, 'pu'));
    expect([q.status, q.body.role?.role_name]).toEqual([200, 'new player']);
    expect(gm.calls.filter((c) => c.gameId === game.gameId).map((c) => c.comboId)).toEqual([newCombo]);
    const listed = await admin(t, 'GET', `/admin/v1/bindings?game_id=${game.gameId}`);
    expect(listed.body.data).toEqual([
      { game_id: game.gameId, partner_id: partner.partnerId, partner_user_id: 'pu', combo_id: newCombo, role_id: 'r1', bound_at: clock.now() },
    ]);
  });
});

describe('GET /admin/v1/bindings: filters and paging', () => {
  it('partner_id filters: another partner\'s bindings in the same game are left out', async () => {
    const game = await gmGame();
    const [p1, p2] = [await createPartner(t, [game.gameId]), await createPartner(t, [game.gameId])];
    expect((await bind(game, p1, 'u1', 'c', 'r')).status).toBe(200);
    expect((await bind(game, p2, 'u2', 'c', 'r')).status).toBe(200);
    expect((await bind(game, p2, 'u3', 'c', 'r')).status).toBe(200);
    const one = await admin(t, 'GET', `/admin/v1/bindings?partner_id=${p1.partnerId}`);
    expect(one.body.data.map((b: Listed) => [b.partner_id, b.partner_user_id])).toEqual([[p1.partnerId, 'u1']]);
    const two = await admin(t, 'GET', `/admin/v1/bindings?game_id=${game.gameId}&partner_id=${p2.partnerId}`);
    expect(two.body.data.map((b: Listed) => b.partner_user_id).sort()).toEqual(['u2', 'u3']);
  });

  it('bindings made at the same instant page without repeats or gaps (limit 1 and 2)', async () => {
    const game = await gmGame();
    const partner = await createPartner(t, [game.gameId]);
    const users = ['a', 'b', 'c', 'd', 'e'];
    // The clock stands still: every bound_at is equal, the rest of the key orders them.
    for (const u of users) expect((await bind(game, partner, u, 'c', 'r')).status).toBe(200);
    const all = await admin(t, 'GET', `/admin/v1/bindings?game_id=${game.gameId}`);
    expect(new Set(all.body.data.map((b: Listed) => b.bound_at)).size).toBe(1);
    // The order among equal times is the service's own; paging must follow it exactly.
    const order: string[] = all.body.data.map((b: Listed) => b.partner_user_id);
    expect([...order].sort()).toEqual(users);
    for (const limit of [1, 2]) {
      const { rows } = await listAll(`game_id=${game.gameId}`, limit);
      expect([limit, rows.map((b) => b.partner_user_id)]).toEqual([limit, order]);
    }
  });

  it('a last page that is exactly full answers next_cursor null', async () => {
    const game = await gmGame();
    const partner = await createPartner(t, [game.gameId]);
    for (const u of ['a', 'b', 'c', 'd']) {
      expect((await bind(game, partner, u, 'c', 'r')).status).toBe(200);
      clock.advance(1000);
    }
    const two = await listAll(`game_id=${game.gameId}`, 2);
    expect(two.pages).toEqual([
      { size: 2, next: expect.any(String) },
      { size: 2, next: null },
    ]);
    expect(two.rows.map((b) => b.partner_user_id)).toEqual(['d', 'c', 'b', 'a']);
    const four = await admin(t, 'GET', `/admin/v1/bindings?game_id=${game.gameId}&limit=4`);
    expect([four.body.data.length, four.body.next_cursor]).toEqual([4, null]);
  });
});

describe('GM answers of the wrong shape (no cached role) -> 500 internal_error', () => {
  const answer = (roles: unknown[]) => () => (gm.mode = { kind: 'raw', body: JSON.stringify({ roles }) });
  const cases: [string, () => void][] = [
    ['server_name a number', answer([role('r1', { server_name: 12 })])],
    ['server_name null', answer([role('r1', { server_name: null })])],
    ['role_name a number', answer([role('r1', { role_name: 7 })])],
    ['role_name missing', answer([role('r1', { role_name: undefined })])],
    // Beside the bound role: the whole answer is unusable, not just that entry.
    ['an empty role_id', answer([role('r1'), role('')])],
    ['avatar_url a number', answer([role('r1', { avatar_url: 5 })])],
    ['avatar_url an object', answer([role('r1', { avatar_url: { url: 'https://cdn.example.com/a.png' } })])],
    // PROTOCOL 8: success is 200; another 2xx, even with roles in it, is not an answer to use.
    ['roles answered with 201', () => (gm.mode = { kind: 'status', status: 201, body: JSON.stringify({ roles: [role('r1')] }) })],
    ['roles answered with 202', () => (gm.mode = { kind: 'status', status: 202, body: JSON.stringify({ roles: [role('r1')] }) })],
  ];
  it.each(cases)('%s', async (_name, arrange) => {
    const game = await gmGame();
    const partner = await createPartner(t, [game.gameId]);
    const combo = uniq('combo');
    gm.roles.set(combo, [role('r1')]);
    expect((await bind(game, partner, 'pu', combo, 'r1')).status).toBe(200);
    arrange();
    const r = await partnerGet(t, partner, queryUri(game.gameId, 'pu'));
    expect([r.status, r.body.error]).toEqual([500, 'internal_error']);
    expect(gm.callsFor(game.gameId)).toBe(1);
    // Nothing of it was cached: a good answer next time is used.
    gm.mode = { kind: 'roles' };
    const ok = await partnerGet(t, partner, queryUri(game.gameId, 'pu'));
    expect([ok.status, ok.body.role?.role_id]).toEqual([200, 'r1']);
  });
});

describe('operator API: partners', () => {
  it('a PATCH refused 400 (unknown game) stores none of its other changes and writes no audit entry', async () => {
    const game = await gmGame();
    const partner = await createPartner(t, [game.gameId]);
    const before = await admin(t, 'GET', `/admin/v1/partners/${partner.partnerId}`);
    clock.advance(5000);
    const bad = await admin(t, 'PATCH', `/admin/v1/partners/${partner.partnerId}`, {
      name: 'Renamed',
      enabled: false,
      rate_limit_per_second: 3,
      games: [game.gameId, 'no-such-game'],
    });
    expect([bad.status, bad.body.error]).toEqual([400, 'invalid_request']);
    expect(bad.body.message).toContain('no-such-game');
    const after = await admin(t, 'GET', `/admin/v1/partners/${partner.partnerId}`);
    expect(after.body).toEqual(before.body);
    const audit = await admin(t, 'GET', `/admin/v1/audit?target=${partner.partnerId}`);
    expect(audit.body.data.map((a: { action: string }) => a.action)).toEqual(['partner.create']);
    // Still enabled and granted: the partner's queries are answered as before.
    expect((await partnerGet(t, partner, queryUri(game.gameId, 'nobody'))).status).toBe(404);
  });

  it('a partner id looked up before it existed is usable at once after it is created', async () => {
    const game = await gmGame();
    const partnerId = uniq('late');
    const early = await bind(game, partnerId, 'pu', 'c', 'r1');
    expect([early.status, early.body.error]).toEqual([400, 'invalid_request']);
    const c = await admin(t, 'POST', '/admin/v1/partners', { partner_id: partnerId, name: 'Late', games: [game.gameId] });
    expect(c.status).toBe(201);
    // No waiting out a cache: the clock does not move.
    expect((await bind(game, partnerId, 'pu', 'c', 'r1')).status).toBe(200);
    const partner: TestPartner = { partnerId, secret: c.body.secret_key, keyId: c.body.key_id };
    gm.roles.set('c', [role('r1')]);
    const q = await partnerGet(t, partner, queryUri(game.gameId, 'pu'));
    expect([q.status, q.body.role?.role_id]).toEqual([200, 'r1']);
  });

  it('creating answers games sorted, as GET does', async () => {
    const games = [await createGame(t), await createGame(t), await createGame(t)].map((g) => g.gameId);
    const sorted = [...games].sort();
    const given = [...sorted].reverse();
    const r = await admin(t, 'POST', '/admin/v1/partners', { partner_id: uniq('sorted'), name: 'S', games: given });
    expect(r.status).toBe(201);
    expect(r.body.games).toEqual(sorted);
    expect((await admin(t, 'GET', `/admin/v1/partners/${r.body.partner_id}`)).body.games).toEqual(sorted);
  });

  it('creating and deleting a partner key are audited', async () => {
    const partner = await createPartner(t, []);
    const k = await admin(t, 'POST', `/admin/v1/partners/${partner.partnerId}/keys`, {});
    expect(k.status).toBe(201);
    const created = await admin(t, 'GET', `/admin/v1/audit?target=${encodeURIComponent(`${partner.partnerId}/${k.body.key_id}`)}`);
    expect(created.body.data.map((a: { action: string; actor: string }) => [a.action, a.actor])).toEqual([['partner.key.create', 'ADMIN_TOKEN']]);
    expect(JSON.stringify(created.body.data)).not.toContain(k.body.secret_key);
    const d = await admin(t, 'DELETE', `/admin/v1/partners/${partner.partnerId}/keys/${partner.keyId}`);
    expect(d.status).toBe(200);
    const deleted = await admin(t, 'GET', `/admin/v1/audit?target=${encodeURIComponent(`${partner.partnerId}/${partner.keyId}`)}`);
    expect(deleted.body.data.map((a: { action: string }) => a.action)).toEqual(['partner.key.delete']);
    const byAction = await admin(t, 'GET', '/admin/v1/audit?action=partner.key.delete&limit=200');
    expect(byAction.body.data.map((a: { target: string }) => a.target)).toContain(`${partner.partnerId}/${partner.keyId}`);
  });
});
