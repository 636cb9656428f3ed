import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { admin, createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';
import { createPartner, FakeGm, partnerGet, queryUri, role, until, type TestPartner } from './helpers/partners.js';
import { paidOrder } from './helpers/paid-orders.js';

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

let comboSeq = 0;
async function setup(settings: Record<string, unknown> = {}): Promise<{ game: TestGame; partner: TestPartner; combo: string }> {
  const game = await createGame(t, { gm_url: gm.url, ...settings });
  gmKeys.set(game.gameId, [game.secret]);
  const partner = await createPartner(t, [game.gameId]);
  return { game, partner, combo: `combo-${++comboSeq}-${game.gameId}` };
}

function bind(game: TestGame, body: Record<string, unknown>, prefix = '/v1/server') {
  return signed(t, game, 'POST', `${prefix}/bind-partner-user`, body);
}

/** A game, a partner, a bound user whose role the GM knows; returns the query URI. */
async function bound(roleOverrides: Record<string, unknown> = {}) {
  const s = await setup();
  gm.roles.set(s.combo, [role('r1', roleOverrides), role('r2')]);
  const b = await bind(s.game, { partner_id: s.partner.partnerId, partner_user_id: 'pu-1', combo_id: s.combo, role_id: 'r1' });
  expect(b.status).toBe(200);
  return { ...s, uri: queryUri(s.game.gameId, 'pu-1'), boundAt: b.body.bound_at as number };
}

describe('bind-partner-user / unbind-partner-user', () => {
  it('binds and answers bound_at in Unix seconds, under /v1/server and /v3/server', async () => {
    const { game, partner, combo } = await setup();
    const a = await bind(game, { partner_id: partner.partnerId, partner_user_id: 'u1', combo_id: combo, role_id: 'r1' });
    expect(a.status).toBe(200);
    expect(a.body).toEqual({ bound_at: Math.floor(clock.now() / 1000) });
    const b = await bind(game, { partner_id: partner.partnerId, partner_user_id: 'u2', combo_id: combo, role_id: 'r1' }, '/v3/server');
    expect(b.status).toBe(200);
  });

  it('binding again replaces the binding and moves bound_at', async () => {
    const { game, partner, combo } = await setup();
    gm.roles.set(combo, [role('r1'), role('r2')]);
    const a = await bind(game, { partner_id: partner.partnerId, partner_user_id: 'u1', combo_id: combo, role_id: 'r1' });
    clock.advance(10_000);
    const b = await bind(game, { partner_id: partner.partnerId, partner_user_id: 'u1', combo_id: combo, role_id: 'r2' });
    expect(b.body.bound_at).toBe(a.body.bound_at + 10);
    const q = await partnerGet(t, partner, queryUri(game.gameId, 'u1'));
    expect(q.status).toBe(200);
    expect(q.body.bound_at).toBe(b.body.bound_at);
    expect(q.body.role.role_id).toBe('r2');
    const list = await admin(t, 'GET', `/admin/v1/bindings?game_id=${game.gameId}`);
    expect(list.body.data).toHaveLength(1);
  });

  it('unbinds (200 {} also when nothing was bound), then the query is 404 binding_not_found', async () => {
    const { game, partner, uri } = await bound();
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    const u = await signed(t, game, 'POST', '/v1/server/unbind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'pu-1' });
    expect(u.status).toBe(200);
    expect(u.body).toEqual({});
    const again = await signed(t, game, 'POST', '/v3/server/unbind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'pu-1' });
    expect(again.status).toBe(200);
    const q = await partnerGet(t, partner, uri);
    expect(q.status).toBe(404);
    expect(q.body.error).toBe('binding_not_found');
  });

  it('refuses an unknown partner and a partner not granted the game (400)', async () => {
    const { game, combo } = await setup();
    const other = await createGame(t);
    const stranger = await createPartner(t, [other.gameId]);
    const a = await bind(game, { partner_id: 'no-such-partner', partner_user_id: 'u', combo_id: combo, role_id: 'r' });
    expect(a.status).toBe(400);
    expect(a.body.error).toBe('invalid_request');
    expect(a.body.message).toMatch(/partner_id/);
    const b = await bind(game, { partner_id: stranger.partnerId, partner_user_id: 'u', combo_id: combo, role_id: 'r' });
    expect(b.status).toBe(400);
    expect(b.body.message).toMatch(/not granted/);
    // Alike, but for the id: a game cannot tell which partners exist.
    expect(a.body.message.replace('no-such-partner', stranger.partnerId)).toBe(b.body.message);
    const count = await t.service.database.db.selectFrom('bindings').select('game_id').where('game_id', '=', game.gameId).execute();
    expect(count).toHaveLength(0);
  });

  it.each(['partner_id', 'partner_user_id', 'combo_id', 'role_id'])('checks %s at every bound (1..64 code points)', async (field) => {
    const { game, partner, combo } = await setup();
    const base = { partner_id: partner.partnerId, partner_user_id: 'u', combo_id: combo, role_id: 'r' };
    const send = (v: unknown) => bind(game, { ...base, [field]: v });
    const missing = { ...base } as Record<string, unknown>;
    delete missing[field];
    expect((await bind(game, missing)).status).toBe(400);
    expect((await send('')).status).toBe(400);
    expect((await send(12)).status).toBe(400);
    const tooLong = await send('龍'.repeat(65));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.message).toContain(field);
    if (field === 'partner_id') return; // a valid partner id cannot be 1 or 64 arbitrary chars
    expect((await send('x')).status).toBe(200);
    expect((await send('龍'.repeat(64))).status).toBe(200);
  });

  it('needs a game signature', async () => {
    const { partner, combo } = await setup();
    const res = await fetch(`${t.url}/v1/server/bind-partner-user`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partner_id: partner.partnerId, partner_user_id: 'u', combo_id: combo, role_id: 'r' }),
    });
    expect(res.status).toBe(401);
  });
});

describe('GET /v1/query-binding', () => {
  it('reaches a GM URL given by host name (http://localhost:<port>), as real GM URLs are written', async () => {
    const { game, partner, uri } = await bound();
    expect((await admin(t, 'PATCH', `/admin/v1/games/${game.gameId}`, { gm_url: gm.url.replace('127.0.0.1', 'localhost') })).status).toBe(200);
    const q = await partnerGet(t, partner, uri);
    expect([q.status, q.body.role?.role_id]).toEqual([200, 'r1']);
  });

  it('answers exactly {bound_at, role} with the GM role, without extra, from a signed ListRoles', async () => {
    const { game, partner, uri, boundAt, combo } = await bound();
    const q = await partnerGet(t, partner, uri);
    expect(q.status).toBe(200);
    expect(q.headers.get('x-trace-id')).toBeTruthy();
    expect(q.body).toEqual({
      bound_at: boundAt,
      role: {
        server_id: 12,
        server_name: 'S12 青龙',
        role_id: 'r1',
        role_name: 'name-r1',
        role_level: 42,
        avatar_url: 'https://cdn.example.com/a.png',
        create_time: 1_700_000_000,
      },
    });
    expect(gm.calls.filter((c) => c.gameId === game.gameId)).toEqual([expect.objectContaining({ comboId: combo })]);
  });

  it('answers avatar_url "" when the game sends none, null or ""', async () => {
    for (const avatar of [undefined, null, '']) {
      const { partner, uri } = await bound({ avatar_url: avatar });
      const q = await partnerGet(t, partner, uri);
      expect(q.status).toBe(200);
      expect(q.body.role.avatar_url).toBe('');
    }
  });

  it('signs the GM request with the key the game last signed with: the old one after a rotation until the game uses the new one', async () => {
    const { game, partner, uri } = await bound();
    const k = await admin(t, 'POST', `/admin/v1/games/${game.gameId}/keys`, {});
    expect(k.status).toBe(201);
    // The GM holds only the old key: still valid.
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    const fresh: TestGame = { gameId: game.gameId, secret: k.body.secret_key, keyId: k.body.key_id };
    expect((await bind(fresh, { partner_id: partner.partnerId, partner_user_id: 'pu-other', combo_id: 'c-other', role_id: 'r1' })).status).toBe(200);
    gmKeys.set(game.gameId, [fresh.secret]); // the GM now holds only the new key
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
  });

  it('404 role_not_found when the game lists other roles or none', async () => {
    const { game, partner, combo } = await setup();
    gm.roles.set(combo, [role('other')]);
    await bind(game, { partner_id: partner.partnerId, partner_user_id: 'a', combo_id: combo, role_id: 'gone' });
    await bind(game, { partner_id: partner.partnerId, partner_user_id: 'b', combo_id: `${combo}-empty`, role_id: 'r1' });
    const a = await partnerGet(t, partner, queryUri(game.gameId, 'a'));
    expect(a.status).toBe(404);
    expect(a.body.error).toBe('role_not_found');
    const b = await partnerGet(t, partner, queryUri(game.gameId, 'b'));
    expect(b.status).toBe(404);
    expect(b.body.error).toBe('role_not_found');
  });

  it('checks game_id and partner_user_id at every bound', async () => {
    const { game, partner, combo } = await setup();
    gm.roles.set(combo, [role('r1')]);
    const long = '龍'.repeat(64);
    await bind(game, { partner_id: partner.partnerId, partner_user_id: long, combo_id: combo, role_id: 'r1' });
    await bind(game, { partner_id: partner.partnerId, partner_user_id: 'x', combo_id: combo, role_id: 'r1' });
    const get = (u: string) => partnerGet(t, partner, u);
    const expect400 = async (u: string, field: string) => {
      const r = await get(u);
      expect(r.status, u).toBe(400);
      expect(r.body.error).toBe('invalid_request');
      expect(r.body.message).toContain(field);
    };
    await expect400('/v1/query-binding', 'game_id');
    await expect400(`/v1/query-binding?game_id=${game.gameId}`, 'partner_user_id');
    await expect400(`/v1/query-binding?partner_user_id=x`, 'game_id');
    await expect400(queryUri('', 'x'), 'game_id');
    await expect400(queryUri(game.gameId, ''), 'partner_user_id');
    await expect400(queryUri(game.gameId, `${long}龍`), 'partner_user_id');
    await expect400(queryUri('g'.repeat(65), 'x'), 'game_id');
    await expect400(`${queryUri(game.gameId, 'x')}&game_id=${game.gameId}`, 'game_id');
    // Bad percent-encoding is refused, not read as literal text (%FF would name the user "%FF").
    await bind(game, { partner_id: partner.partnerId, partner_user_id: '%FF', combo_id: combo, role_id: 'r1' });
    for (const bad of ['%FF', '%E4%B8', '%ED%A0%80', 'a%zz', 'a%']) {
      await expect400(`/v1/query-binding?game_id=${game.gameId}&partner_user_id=${bad}`, 'partner_user_id is not valid percent-encoded UTF-8');
    }
    expect((await get(queryUri(game.gameId, '%FF'))).status).toBe(200);
    expect((await get(queryUri(game.gameId, 'x'))).status).toBe(200);
    expect((await get(queryUri(game.gameId, long))).status).toBe(200);
    expect((await get(queryUri('g'.repeat(64), 'x'))).body.message).toMatch(/not granted/);
  });

  it('400 for an unknown game and for a game the partner is not granted', async () => {
    const { partner } = await setup();
    const other = await createGame(t, { gm_url: gm.url });
    for (const gameId of ['no-such-game', other.gameId]) {
      const r = await partnerGet(t, partner, queryUri(gameId, 'pu-1'));
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('invalid_request');
    }
  });

  it('follows the documented order of checks', async () => {
    const { game, partner, uri } = await bound();
    // 405 before anything: wrong method on the path, even unsigned.
    const post = await fetch(t.url + uri, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(post.status).toBe(405);
    expect((await post.json()).error).toBe('method_not_allowed');
    // 401 before 403 and 400: bad signature of a disabled partner with no parameters.
    await admin(t, 'PATCH', `/admin/v1/partners/${partner.partnerId}`, { enabled: false });
    const badSig = await partnerGet(t, partner, '/v1/query-binding', { secret: 'sk_wrongwrongwrongwrong' });
    expect([badSig.status, badSig.body.error]).toEqual([401, 'invalid_signature']);
    const unknown = await partnerGet(t, { ...partner, partnerId: 'nobody' }, uri);
    expect([unknown.status, unknown.body.error]).toEqual([401, 'invalid_signature']);
    // 403 before 400: disabled partner, missing parameters.
    const disabled = await partnerGet(t, partner, '/v1/query-binding');
    expect([disabled.status, disabled.body.error]).toEqual([403, 'partner_disabled']);
    await admin(t, 'PATCH', `/admin/v1/partners/${partner.partnerId}`, { enabled: true });
    // 400 (parameters), 400 (grant) before 404 (binding).
    expect((await partnerGet(t, partner, '/v1/query-binding')).status).toBe(400);
    expect((await partnerGet(t, partner, queryUri('not-granted', 'nobody'))).status).toBe(400);
    const none = await partnerGet(t, partner, queryUri(game.gameId, 'nobody'));
    expect([none.status, none.body.error]).toEqual([404, 'binding_not_found']);
    // No GM call for any refused query: only the successful one below asks the game.
    expect(gm.callsFor(game.gameId)).toBe(0);
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    expect(gm.callsFor(game.gameId)).toBe(1);
  });
});

describe('role cache', () => {
  it('serves the second query from cache, and asks the game again after the TTL', async () => {
    const { game, partner, uri } = await bound();
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    expect(gm.callsFor(game.gameId)).toBe(1);
    clock.advance(299_000);
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    expect(gm.callsFor(game.gameId)).toBe(1);
    clock.advance(1_000);
    gm.roles.set(gm.calls.find((c) => c.gameId === game.gameId)!.comboId, [role('r1', { role_level: 43 })]);
    const fresh = await partnerGet(t, partner, uri);
    expect(fresh.body.role.role_level).toBe(43);
    expect(gm.callsFor(game.gameId)).toBe(2);
  });

  it('shares one GM call between concurrent queries for the same player', async () => {
    const { game, partner, uri, combo } = await bound();
    await bind(game, { partner_id: partner.partnerId, partner_user_id: 'pu-2', combo_id: combo, role_id: 'r2' });
    // The held call must outlast the five queries arriving and the wait for them, which under a
    // loaded CI machine can take longer than this file's 300 ms GM_TIMEOUT_MS: the queries go to
    // a process on the same database whose time-out cannot run out first.
    const patient = await startService({ clock, db: t.db, env: { GM_TIMEOUT_MS: '60000' } });
    try {
      gm.mode = { kind: 'hold' };
      const uris = [uri, uri, uri, uri, queryUri(game.gameId, 'pu-2')];
      const answers = Promise.all(uris.map((u) => partnerGet(patient, partner, u)));
      await until(() => patient.service.roleCache.waiting() === uris.length, 'every query to wait on the GM');
      expect(gm.callsFor(game.gameId)).toBe(1);
      gm.release();
      const res = await answers;
      expect(res.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
      expect(res[4]!.body.role.role_id).toBe('r2');
      expect(gm.callsFor(game.gameId)).toBe(1);
    } finally {
      gm.release();
      await patient.stop();
    }
  });

  it('serves a stale role up to 1 h when the game cannot be reached, then 500', async () => {
    const { game, partner, uri } = await bound();
    const first = await partnerGet(t, partner, uri);
    expect(first.status).toBe(200);
    clock.advance(301_000);
    gm.mode = { kind: 'status', status: 503, body: JSON.stringify({ error: 'maintenance_error', message: 'down' }) };
    const stale = await partnerGet(t, partner, uri);
    expect(stale.status).toBe(200);
    expect(stale.body).toEqual(first.body);
    gm.mode = { kind: 'destroy' };
    clock.advance(3_299_000); // exactly 1 h after the fetch
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    clock.advance(1_000);
    const gone = await partnerGet(t, partner, uri);
    expect([gone.status, gone.body.error]).toEqual([500, 'internal_error']);
    expect(gone.body.message).not.toMatch(/127\.0\.0\.1|ECONN|socket/);
    expect(gm.callsFor(game.gameId)).toBe(4);
  });

  it('answers 404 role_not_found, not a stale copy, when the game answers without the role', async () => {
    const { partner, uri, combo } = await bound();
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    clock.advance(301_000);
    gm.roles.set(combo, [role('r2')]);
    const r = await partnerGet(t, partner, uri);
    expect([r.status, r.body.error]).toEqual([404, 'role_not_found']);
  });

  it('reads a GM\'s role_not_found (the Go SDK\'s 404, the Node SDK\'s 500) as an answer, not an outage', async () => {
    const { game, partner, uri } = await bound();
    const notFound = { kind: 'status', status: 404, body: JSON.stringify({ error: 'role_not_found', message: 'no such role' }) } as const;
    // Nothing cached: 404, not 500.
    gm.mode = notFound;
    const other = await bind(game, { partner_id: partner.partnerId, partner_user_id: 'pu-3', combo_id: 'c-none', role_id: 'r9' });
    expect(other.status).toBe(200);
    const none = await partnerGet(t, partner, queryUri(game.gameId, 'pu-3'));
    expect([none.status, none.body.error]).toEqual([404, 'role_not_found']);
    // Cached before: 404, not the stale copy.
    gm.mode = { kind: 'roles' };
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    clock.advance(301_000);
    gm.mode = notFound;
    const gone = await partnerGet(t, partner, uri);
    expect([gone.status, gone.body.error]).toEqual([404, 'role_not_found']);
    // The Node SDK answers an error it has no status for (role_not_found among them) with 500.
    expect((await bind(game, { partner_id: partner.partnerId, partner_user_id: 'pu-5', combo_id: 'c-node', role_id: 'r9' })).status).toBe(200);
    gm.mode = { kind: 'status', status: 500, body: JSON.stringify({ error: 'role_not_found', message: 'no such role' }) };
    const node = await partnerGet(t, partner, queryUri(game.gameId, 'pu-5'));
    expect([node.status, node.body.error]).toEqual([404, 'role_not_found']);
    // Another 404 (no role_not_found in it) is still an outage.
    expect((await bind(game, { partner_id: partner.partnerId, partner_user_id: 'pu-4', combo_id: 'c-down', role_id: 'r9' })).status).toBe(200);
    gm.mode = { kind: 'status', status: 404, body: JSON.stringify({ error: 'not_found', message: 'no such path' }) };
    const down = await partnerGet(t, partner, queryUri(game.gameId, 'pu-4'));
    expect([down.status, down.body.error]).toEqual([500, 'internal_error']);
  });

  it('never serves a role stale once an answer about another role of the player left it out', async () => {
    // u1 -> r1 and pu-2 -> r2, one player. The game drops r2 from its list; a query for r1
    // fetches that list. When the game is then down, r2 is 404, not the copy cached before.
    const { game, partner, uri, combo } = await bound();
    await bind(game, { partner_id: partner.partnerId, partner_user_id: 'pu-2', combo_id: combo, role_id: 'r2' });
    gm.roles.set(combo, [role('r1'), role('r2')]);
    const r2 = queryUri(game.gameId, 'pu-2');
    expect((await partnerGet(t, partner, r2)).status).toBe(200);
    clock.advance(301_000);
    gm.roles.set(combo, [role('r1')]);
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    gm.mode = { kind: 'status', status: 503, body: JSON.stringify({ error: 'maintenance_error', message: 'down' }) };
    const gone = await partnerGet(t, partner, r2);
    expect([gone.status, gone.body.error]).toEqual([404, 'role_not_found']);
  });

  it('a role bound after the cached list was fetched is 500 while the game is down, not 404: the game may have created it since', async () => {
    // PROTOCOL 7: unreachable with nothing to serve is 500 (retryable); 404 is for a role the
    // game's answer left out, and a list from before the binding says nothing of its role.
    const { game, partner, uri, combo } = await bound();
    expect((await partnerGet(t, partner, uri)).status).toBe(200); // the list [r1, r2] cached
    gm.roles.set(combo, [role('r1'), role('r2'), role('r3')]);
    expect((await bind(game, { partner_id: partner.partnerId, partner_user_id: 'pu-3', combo_id: combo, role_id: 'r3' })).status).toBe(200);
    gm.mode = { kind: 'status', status: 503, body: JSON.stringify({ error: 'maintenance_error', message: 'down' }) };
    const down = await partnerGet(t, partner, queryUri(game.gameId, 'pu-3'));
    expect([down.status, down.body.error]).toEqual([500, 'internal_error']);
    gm.mode = { kind: 'roles' };
    const up = await partnerGet(t, partner, queryUri(game.gameId, 'pu-3'));
    expect([up.status, up.body.role?.role_id]).toEqual([200, 'r3']);
    // The list fetched after the binding (past the cache TTL) leaves r3 out: the game says it is gone.
    clock.advance(301_000);
    gm.roles.set(combo, [role('r1'), role('r2')]);
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    gm.mode = { kind: 'status', status: 503, body: JSON.stringify({ error: 'maintenance_error', message: 'down' }) };
    const gone = await partnerGet(t, partner, queryUri(game.gameId, 'pu-3'));
    expect([gone.status, gone.body.error]).toEqual([404, 'role_not_found']);
  });

  it('serves stale on a GM time-out', async () => {
    const { partner, uri } = await bound();
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
    clock.advance(301_000);
    gm.mode = { kind: 'hold' };
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
  });
});

describe('GM answers that cannot be used (no cached role) -> 500 internal_error', () => {
  const huge = JSON.stringify({ roles: [role('r1', { server_name: 'x'.repeat(2 * 1024 * 1024) })] });
  const cases: [string, () => void][] = [
    ['an error answer', () => (gm.mode = { kind: 'status', status: 500, body: JSON.stringify({ error: 'internal_error', message: 'boom' }) })],
    ['a 200 that is not JSON', () => (gm.mode = { kind: 'raw', body: '<html>oops</html>' })],
    // rest-interface 1, rule 3: a body is parsed as JSON only when its Content-Type says so.
    ['roles answered as text/plain', () => (gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1')] }), contentType: 'text/plain' })],
    ['roles answered with no Content-Type', () => (gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1')] }), contentType: null })],
    ['a 404 that is not JSON', () => (gm.mode = { kind: 'status', status: 404, body: 'not found' })],
    ['roles that is not an array', () => (gm.mode = { kind: 'raw', body: '{"roles":{"r1":{}}}' })],
    ['a JSON array', () => (gm.mode = { kind: 'raw', body: '[]' })],
    ['null', () => (gm.mode = { kind: 'raw', body: 'null' })],
    ['role_level as a string', () => (gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1', { role_level: '42' })] }) })],
    ['server_id not an integer', () => (gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1', { server_id: 1.5 })] }) })],
    ['create_time missing', () => (gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1', { create_time: undefined })] }) })],
    ['role_id a number', () => (gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1', { role_id: 1 })] }) })],
    ['a role that is not an object', () => (gm.mode = { kind: 'raw', body: '{"roles":["r1"]}' })],
    ['a body over 1 MiB', () => (gm.mode = { kind: 'raw', body: huge })],
    ['a closed connection', () => (gm.mode = { kind: 'destroy' })],
    ['no answer within GM_TIMEOUT_MS', () => (gm.mode = { kind: 'hold' })],
  ];
  it.each(cases)('%s', async (_name, arrange) => {
    const { game, partner, uri } = await bound();
    arrange();
    const r = await partnerGet(t, partner, uri);
    expect([r.status, r.body.error]).toEqual([500, 'internal_error']);
    expect(gm.callsFor(game.gameId)).toBe(1);
    // The service stays healthy and asks again next time.
    gm.release();
    gm.mode = { kind: 'roles' };
    expect((await partnerGet(t, partner, uri)).status).toBe(200);
  });

  it('a JSON answer with Content-Type parameters or in another case is used', async () => {
    for (const contentType of ['application/json; charset=utf-8', 'Application/JSON;charset=UTF-8']) {
      const { partner, uri } = await bound();
      gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1', { role_name: 'Typed' })] }), contentType };
      const r = await partnerGet(t, partner, uri);
      expect([contentType, r.status, r.body.role?.role_name]).toEqual([contentType, 200, 'Typed']);
      gm.mode = { kind: 'roles' };
    }
  });

  it('a game without a GM URL, or a GM that is not listening', async () => {
    const noUrl = await setup({ gm_url: null });
    await bind(noUrl.game, { partner_id: noUrl.partner.partnerId, partner_user_id: 'u', combo_id: noUrl.combo, role_id: 'r1' });
    const a = await partnerGet(t, noUrl.partner, queryUri(noUrl.game.gameId, 'u'));
    expect([a.status, a.body.error]).toEqual([500, 'internal_error']);
    // The operator sets the GM URL later: the next query reaches the game.
    gm.roles.set(noUrl.combo, [role('r1')]);
    expect((await admin(t, 'PATCH', `/admin/v1/games/${noUrl.game.gameId}`, { gm_url: gm.url })).status).toBe(200);
    expect((await partnerGet(t, noUrl.partner, queryUri(noUrl.game.gameId, 'u'))).status).toBe(200);

    const closed = new FakeGm(() => gmKeys, () => clock.now());
    await closed.start();
    const deadUrl = closed.url;
    await closed.stop();
    const dead = await setup({ gm_url: deadUrl });
    await bind(dead.game, { partner_id: dead.partner.partnerId, partner_user_id: 'u', combo_id: dead.combo, role_id: 'r1' });
    const b = await partnerGet(t, dead.partner, queryUri(dead.game.gameId, 'u'));
    expect([b.status, b.body.error]).toEqual([500, 'internal_error']);
  });
});

describe('GET /admin/v1/bindings', () => {
  it('lists newest first with filters and cursor paging', async () => {
    const { game, partner, combo } = await setup();
    for (const u of ['a', 'b', 'c', 'd', 'e']) {
      await bind(game, { partner_id: partner.partnerId, partner_user_id: u, combo_id: u === 'e' ? 'other' : combo, role_id: 'r' });
      clock.advance(1000);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/admin/v1/bindings?game_id=${game.gameId}&partner_id=${partner.partnerId}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const r = await admin(t, 'GET', q);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data.map((b: { partner_user_id: string }) => b.partner_user_id));
      cursor = r.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['e', 'd', 'c', 'b', 'a']);
    const byCombo = await admin(t, 'GET', `/admin/v1/bindings?game_id=${game.gameId}&combo_id=other`);
    expect(byCombo.body.data).toEqual([
      { game_id: game.gameId, partner_id: partner.partnerId, partner_user_id: 'e', combo_id: 'other', role_id: 'r', bound_at: expect.any(Number) },
    ]);
    const byUser = await admin(t, 'GET', `/admin/v1/bindings?partner_user_id=c&game_id=${game.gameId}`);
    expect(byUser.body.data.map((b: { partner_user_id: string }) => b.partner_user_id)).toEqual(['c']);
    expect((await admin(t, 'GET', '/admin/v1/bindings?cursor=garbage')).status).toBe(400);
    expect((await admin(t, 'GET', '/admin/v1/bindings?limit=0')).status).toBe(400);
    expect((await admin(t, 'GET', '/admin/v1/bindings?limit=201')).status).toBe(400);
    expect((await fetch(`${t.url}/admin/v1/bindings`)).status).toBe(401);
  });
});

describe('GM URL rules', () => {
  it('in production, refuses a GM URL on an internal address (500, no call made)', async () => {
    const prod = await startService({ clock, env: { NODE_ENV: 'production', ALLOW_PRIVATE_NOTIFY_URLS: '0', GM_TIMEOUT_MS: '300' } });
    try {
      const game = await createGame(prod);
      // The games API refuses this URL now (test/create-order.test.ts, "in production, a URL on
      // a literal internal address"); one stored before production still must not be called.
      await prod.service.database.db.updateTable('games').set({ gm_url: gm.url }).where('game_id', '=', game.gameId).execute();
      gmKeys.set(game.gameId, [game.secret]);
      const partner = await createPartner(prod, [game.gameId]);
      gm.roles.set('prod-combo', [role('r1')]);
      const b = await signed(prod, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'u', combo_id: 'prod-combo', role_id: 'r1' });
      expect(b.status).toBe(200);
      const r = await partnerGet(prod, partner, queryUri(game.gameId, 'u'));
      expect([r.status, r.body.error]).toEqual([500, 'internal_error']);
      expect(gm.callsFor(game.gameId)).toBe(0);
    } finally {
      await prod.stop();
    }
  });
});

// A game's GM and its notify_url often share a host. Notifications that hang there hold every
// connection of their pool; GM calls have a pool of their own, so GM_TIMEOUT_MS still holds.
describe('GM calls beside hanging notifications to the same host', () => {
  it('answers a binding query while every notification connection to the GM host hangs', async () => {
    const { game, partner, uri } = await bound();
    for (let i = 0; i < 20; i++) await paidOrder(t, game, `${new URL(gm.url).origin}/hang/${i}`);
    await until(() => gm.hanging >= 16, 'notifications to hold all 16 connections to the host');
    const r = await partnerGet(t, partner, uri);
    expect([r.status, r.body.role?.role_id]).toEqual([200, 'r1']);
  });
});
