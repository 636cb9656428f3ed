import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, admin, createGame, startService, type TestService } from './helpers/service.js';
import { createPartner } from './helpers/partners.js';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => t?.stop());

/** Renames a game with ADMIN_TOKEN and these headers besides. */
const rename = (on: TestService, gameId: string, headers: Record<string, string>) =>
  fetch(`${on.url}/admin/v1/games/${gameId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ name: 'Renamed' }),
  });

describe('GET /admin/v1/audit', () => {
  it('lists operator changes newest first, with who, what and when; filters; cursor paging; never a secret', async () => {
    const before = Date.now();
    const game = await createGame(t);
    const patched = await fetch(`${t.url}/admin/v1/games/${game.gameId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'x-operator': 'alice' },
      body: JSON.stringify({ iap_enabled: false, nppa: { app_id: 'a', biz_id: 'b', secret_key: '2836e95fcd10e04b0069bb1ee659955b' } }),
    });
    expect(patched.status).toBe(200);

    const all = await admin(t, 'GET', `/admin/v1/audit?limit=200`);
    expect(all.status).toBe(200);
    const mine = all.body.data.filter((e: { target: string }) => e.target.startsWith(game.gameId));
    expect(mine.map((e: { action: string }) => e.action)).toEqual(['game.update', 'product.put', 'game.create']);
    expect(mine[0]).toMatchObject({ actor: 'ADMIN_TOKEN', target: game.gameId, detail: { iap_enabled: false } });
    expect(mine[0].at).toBeGreaterThanOrEqual(before);
    expect(mine[2].actor).toBe('ADMIN_TOKEN');
    expect(JSON.stringify(all.body)).not.toContain(game.secret);
    expect(JSON.stringify(all.body)).not.toContain('2836e95fcd10e04b0069bb1ee659955b');

    const filtered = await admin(t, 'GET', `/admin/v1/audit?action=game.update&target=${game.gameId}`);
    expect(filtered.body.data).toHaveLength(1);
    expect(filtered.body.next_cursor).toBeNull();

    const p1 = await admin(t, 'GET', `/admin/v1/audit?target=${game.gameId}&limit=1`);
    expect(p1.body.data[0].action).toBe('game.update');
    const p2 = await admin(t, 'GET', `/admin/v1/audit?target=${game.gameId}&limit=1&cursor=${p1.body.next_cursor}`);
    expect(p2.body.data[0].action).toBe('game.create');
    expect(p2.body.next_cursor).toBeNull();
  });

  // operators.md 1: the audit log records the authenticated actor, never a name the caller claims.
  it.each(['alice', "UTF-8''%E6%9D%8E%E9%9B%B7", 'x'.repeat(65)])('X-Operator %s is not taken: the actor is ADMIN_TOKEN', async (header) => {
    const game = await createGame(t);
    expect((await rename(t, game.gameId, { 'x-operator': header })).status).toBe(200);
    const updates = await admin(t, 'GET', `/admin/v1/audit?action=game.update&target=${game.gameId}`);
    expect(updates.body.data.map((e: { actor: string }) => e.actor)).toEqual(['ADMIN_TOKEN']);
  });

  it('a PATCH that changes nothing ({}) is no change: the game or partner as it is, updated_at kept, no audit entry', async () => {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    for (const path of [`/admin/v1/games/${game.gameId}`, `/admin/v1/partners/${partner.partnerId}`]) {
      const before = await admin(t, 'GET', path);
      const r = await admin(t, 'PATCH', path, {});
      expect([path, r.status]).toEqual([path, 200]);
      expect(r.body).toEqual(before.body);
    }
    for (const target of [game.gameId, partner.partnerId]) {
      const updates = await admin(t, 'GET', `/admin/v1/audit?target=${target}`);
      expect(updates.body.data.map((e: { action: string }) => e.action).filter((a: string) => a.endsWith('.update'))).toEqual([]);
    }
    expect((await admin(t, 'PATCH', '/admin/v1/games/no_such_game', {})).status).toBe(404);
  });

  // operators.md 1: the audit log records the caller's address; X-Forwarded-For only with TRUST_PROXY.
  it('records the client address of each change and the game it is about; filters by game_id', async () => {
    const game = await createGame(t);
    expect((await rename(t, game.gameId, { 'x-forwarded-for': '203.0.113.9' })).status).toBe(200);
    const entries = await admin(t, 'GET', `/admin/v1/audit?game_id=${game.gameId}`);
    expect(entries.body.data.map((e: { action: string; address: string; game_id: string }) => [e.action, e.address, e.game_id])).toEqual([
      ['game.update', '127.0.0.1', game.gameId],
      ['product.put', '127.0.0.1', game.gameId],
      ['game.create', '127.0.0.1', game.gameId],
    ]);
    const partner = await createPartner(t, [game.gameId]);
    const aboutNoGame = await admin(t, 'GET', `/admin/v1/audit?target=${partner.partnerId}`);
    expect(aboutNoGame.body.data[0]).toMatchObject({ action: 'partner.create', address: '127.0.0.1', game_id: null });
  });

  it('with TRUST_PROXY, the address is the forwarded client address', async () => {
    const behind = await startService({ env: { TRUST_PROXY: '127.0.0.1' } });
    try {
      const game = await createGame(behind);
      expect((await rename(behind, game.gameId, { 'x-forwarded-for': '203.0.113.9, 127.0.0.1' })).status).toBe(200);
      const updates = await admin(behind, 'GET', `/admin/v1/audit?action=game.update&target=${game.gameId}`);
      expect(updates.body.data.map((e: { address: string }) => e.address)).toEqual(['203.0.113.9']);
    } finally {
      await behind.stop();
    }
  });

  // bm9wZQ: not JSON; the other: another listing's cursor (a JSON notification id).
  it.each([['limit=0'], ['limit=201'], ['cursor=bm9wZQ'], [`cursor=${Buffer.from('"ntf_0000000000000abcd"').toString('base64url')}`], [`action=${'x'.repeat(65)}`], ['game_id='], [`game_id=${'g'.repeat(65)}`]])('400 invalid_request for %s', async (q) => {
    const r = await admin(t, 'GET', `/admin/v1/audit?${q}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
  });

  it('401 without the admin token', async () => {
    const r = await fetch(`${t.url}/admin/v1/audit`);
    expect(r.status).toBe(401);
  });
});
