import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { admin, createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';
import { createPartner, FakeGm, partnerGet, queryUri, role, type TestPartner } from './helpers/partners.js';

// A partner query the game cannot answer (PROTOCOL 7: 500 internal_error) says what is wrong with
// the game, never its URL; the operator sees the game's last GM error and its time.

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
  gm.mode = { kind: 'roles' };
  expect(gm.failures).toEqual([]);
});

let seq = 0;
const uniq = (p: string) => `${p}-${++seq}-${randomBytes(3).toString('hex')}`;

/** A game with `gmUrl`, a partner granted it, and a partner user bound to role r1. */
async function bound(gmUrl: string | null): Promise<{ game: TestGame; partner: TestPartner }> {
  const game = await createGame(t, { gm_url: gmUrl });
  gmKeys.set(game.gameId, [game.secret]);
  const partner = await createPartner(t, [game.gameId]);
  const combo = uniq('combo');
  gm.roles.set(combo, [role('r1')]);
  const b = await signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'pu', combo_id: combo, role_id: 'r1' });
  expect(b.status).toBe(200);
  return { game, partner };
}

const query = (game: TestGame, partner: TestPartner) => partnerGet(t, partner, queryUri(game.gameId, 'pu'));
const gameOf = async (game: TestGame) => (await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).body;

describe('a partner query the game cannot answer says why, without the game URL', () => {
  it('no gm_url: "no GM endpoint configured"; the admin API shows the error and its time', async () => {
    const { game, partner } = await bound(null);
    expect(await gameOf(game)).toMatchObject({ gm_last_error: null, gm_last_error_at: null });
    const r = await query(game, partner);
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: 'internal_error', message: 'role data is unavailable: the game has no GM endpoint configured (gm_url)' });
    expect(await gameOf(game)).toMatchObject({ gm_last_error: `game ${game.gameId} has no GM URL`, gm_last_error_at: clock.now() });
  });

  it.each([
    ['server_id a string', { server_id: '1' }, 'roles[0].server_id must be an integer (got a string)'],
    ['role_level a fraction', { role_level: 1.5 }, 'roles[0].role_level must be an integer (got a number with a fraction or out of range)'],
    ['create_time missing', { create_time: undefined }, 'roles[0].create_time must be an integer (Unix seconds) (got missing)'],
    ['server_name null', { server_name: null }, 'roles[0].server_name must be a string (got null)'],
  ])('a role list with %s: names the field', async (_name, over, reason) => {
    const { game, partner } = await bound(gm.url);
    gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1', over)] }) };
    const r = await query(game, partner);
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: 'internal_error', message: `role data is unavailable: the game's role list was invalid: ${reason}` });
    const g = await gameOf(game);
    expect(g.gm_last_error).toBe(`ListRoles answer of ${game.gameId} is invalid: ${reason}`);
    expect(g.gm_last_error_at).toBe(clock.now());
  });

  it('an unreachable GM, an error answer, an answer not JSON: said without the URL', async () => {
    const closed = 'http://127.0.0.1:9/gm';
    const down = await bound(closed);
    const r = await query(down.game, down.partner);
    expect(r.status).toBe(500);
    expect(r.body.message).toMatch(/^role data is unavailable: the game's GM endpoint could not be reached \(\w+\)$/);
    expect((await gameOf(down.game)).gm_last_error).toMatch(/^GM request to .* failed: \w+: /);

    const { game, partner } = await bound(gm.url);
    gm.mode = { kind: 'status', status: 503, body: JSON.stringify({ error: 'maintenance', message: `see ${gm.url}` }) };
    const s = await query(game, partner);
    expect(s.body.message).toBe("role data is unavailable: the game's GM endpoint answered HTTP 503 maintenance");
    gm.mode = { kind: 'raw', body: 'ok', contentType: 'text/plain' };
    const p = await query(game, partner);
    expect(p.body.message).toBe('role data is unavailable: the game\'s GM answer was not JSON (Content-Type: "text/plain")');
    for (const m of [r.body.message, s.body.message, p.body.message]) {
      expect(m).not.toContain('127.0.0.1');
      expect(m).not.toContain(new URL(gm.url).host);
    }
  });

  it('the same error again is recorded at most every 10 s; another one at once', async () => {
    const { game, partner } = await bound(gm.url);
    gm.mode = { kind: 'raw', body: JSON.stringify({ roles: [role('r1', { server_id: '1' })] }) };
    await query(game, partner);
    const first = clock.now();
    clock.advance(5_000);
    await query(game, partner);
    expect((await gameOf(game)).gm_last_error_at).toBe(first);
    clock.advance(5_001);
    await query(game, partner);
    expect((await gameOf(game)).gm_last_error_at).toBe(clock.now());
    clock.advance(1_000);
    gm.mode = { kind: 'status', status: 500, body: '{}' };
    await query(game, partner);
    expect(await gameOf(game)).toMatchObject({ gm_last_error: `GM of ${game.gameId} answered 500`, gm_last_error_at: clock.now() });
    // A later good answer keeps the last error for the operator to see.
    gm.mode = { kind: 'roles' };
    expect((await query(game, partner)).status).toBe(200);
    expect((await gameOf(game)).gm_last_error).toBe(`GM of ${game.gameId} answered 500`);
    // The listing shows it too.
    const listed = await admin(t, 'GET', `/admin/v1/games?limit=200`);
    expect(listed.body.data.find((g: { game_id: string }) => g.game_id === game.gameId)).toMatchObject({ gm_last_error: `GM of ${game.gameId} answered 500` });
  });
});
