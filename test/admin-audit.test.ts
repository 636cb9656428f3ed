import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, admin, createGame, startService, type TestService } from './helpers/service.js';
import { createPartner } from './helpers/partners.js';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => t?.stop());

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
    expect(mine[0]).toMatchObject({ actor: 'admin:alice', target: game.gameId, detail: { iap_enabled: false } });
    expect(mine[0].at).toBeGreaterThanOrEqual(before);
    expect(mine[2].actor).toBe('admin');
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

  // X-Operator (docs/api.md, Operator API): printable ASCII as is; any script as an RFC 8187 value;
  // anything else is left out (the audit log says admin).
  it.each([
    ['alice', 'admin:alice'],
    ["UTF-8''%E6%9D%8E%E9%9B%B7", 'admin:李雷'],
    ["utf-8''Jos%C3%A9", 'admin:José'],
    [`UTF-8''${'%E6%9D%8E'.repeat(64)}`, `admin:${'李'.repeat(64)}`],
    [`UTF-8''${'%E6%9D%8E'.repeat(65)}`, 'admin'],
    ['x'.repeat(64), `admin:${'x'.repeat(64)}`],
    ['x'.repeat(65), 'admin'],
    ["UTF-8''%FF", 'admin'],
    ["UTF-8''%0Aforged", 'admin'],
    ["UTF-8''%E2%80%AEevil", 'admin'],
    ["UTF-8''%E6%9D", 'admin'],
    ["UTF-8''", "admin:UTF-8''"],
    // RFC 8187: a language tag is allowed (and ignored); only UTF-8 is decoded.
    ["UTF-8'zh-Hans'%E6%9D%8E%E9%9B%B7", 'admin:李雷'],
    ["ISO-8859-1''Jos%E9", "admin:ISO-8859-1''Jos%E9"],
    ["O'Neil's", "admin:O'Neil's"],
    // The zero-width joiner that Sinhala (and other Indic scripts) need: ශ්‍රී.
    ["UTF-8''%E0%B7%81%E0%B7%8A%E2%80%8D%E0%B6%BB%E0%B7%93", 'admin:ශ්\u200dරී'],
    // Spaces at either end are not kept by HTTP, nor taken encoded.
    ["UTF-8''%20bob", 'admin'],
    // A name of joiners alone shows nothing.
    ["UTF-8''%E2%80%8D", 'admin'],
  ])('X-Operator %s is recorded as %s', async (header, actor) => {
    const game = await createGame(t);
    const r = await fetch(`${t.url}/admin/v1/games/${game.gameId}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json', 'x-operator': header },
      body: JSON.stringify({ name: 'Renamed' }),
    });
    expect(r.status).toBe(200);
    const updates = await admin(t, 'GET', `/admin/v1/audit?action=game.update&target=${game.gameId}`);
    expect(updates.body.data.map((e: { actor: string }) => e.actor)).toEqual([actor]);
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

  // bm9wZQ: not JSON; the other: another listing's cursor (a JSON notification id).
  it.each([['limit=0'], ['limit=201'], ['cursor=bm9wZQ'], [`cursor=${Buffer.from('"ntf_0000000000000abcd"').toString('base64url')}`], [`action=${'x'.repeat(65)}`]])('400 invalid_request for %s', async (q) => {
    const r = await admin(t, 'GET', `/admin/v1/audit?${q}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
  });

  it('401 without the admin token', async () => {
    const r = await fetch(`${t.url}/admin/v1/audit`);
    expect(r.status).toBe(401);
  });
});
