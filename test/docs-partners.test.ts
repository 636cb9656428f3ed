/**
 * docs/guides/partners.md: every `sh` block is run in order against a real service whose game
 * has a real GM endpoint answering ListRoles (FakeGm verifies the service's signature), on the
 * suite's database. The blocks check their own answers (`# => ` lines); this file checks the
 * guide's error table against the service's own error catalogue.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DB } from './helpers/db.js';
import { describeRun, GUIDES, runShellBlocks, shellBlocks, unmetExpectations, type GuideRun } from './helpers/guides.js';
import { createPartner, FakeGm, role, type TestPartner } from './helpers/partners.js';
import { createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';
import { errorCodesByStatus } from '../src/apidocs/openapi.js';
import { readFileSync } from 'node:fs';

const GUIDE = 'docs/guides/partners.md';

let t: TestService;
let gm: FakeGm;
let game: TestGame;
let partner: TestPartner;
const gmKeys = new Map<string, string[]>();
beforeAll(async () => {
  t = await startService();
  gm = await new FakeGm(() => gmKeys, () => Date.now()).start('/gm');
  game = await createGame(t, { gm_url: gm.url });
  gmKeys.set(game.gameId, [game.secret]);
  partner = await createPartner(t, [game.gameId]);
  // What the guide assumes: the game bound partner-user-42 to role-1 of player-1, and
  // partner-user-43 to a role the game no longer lists.
  gm.roles.set('player-1', [role('role-1', { server_name: 'S12', role_name: 'Xiaoming', avatar_url: '', extra: { class: 'mage' } })]);
  for (const [user, roleId] of [['partner-user-42', 'role-1'], ['partner-user-43', 'role-deleted']]) {
    const r = await signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: user, combo_id: 'player-1', role_id: roleId });
    expect(r.status, r.text).toBe(200);
  }
});
afterAll(async () => {
  await gm?.stop();
  await t?.stop();
});

describe(GUIDE, () => {
  const blocks = shellBlocks(GUIDE);
  let run: GuideRun;

  it('has as many sh blocks as the runner expects', () => expect(blocks.length).toBe(GUIDES[GUIDE]!.shBlocks));

  it(`runs every sh block in order against a real service and GM endpoint (${TEST_DB})`, async () => {
    run = await runShellBlocks(blocks, TEST_DB, { COMBO_URL: t.url, PARTNER_ID: partner.partnerId, COMBO_SECRET_KEY: partner.secret, GAME_ID: game.gameId }, 240_000);
    expect(run.status, describeRun(run)).toBe(0);
    expect(run.ran).toEqual(blocks.map((_, i) => i));
  }, 250_000);

  it('every block printed what its "# =>" lines say (answers, statuses, error types)', () => {
    expect(run, 'the run failed').toBeDefined();
    expect(unmetExpectations(blocks, run)).toEqual([]);
  });

  it('shows each error it demonstrates with the status of the error catalogue', () => {
    const seen = new Set<string>();
    for (const i of run.ran) {
      const out = run.outputs.get(i) ?? '';
      for (const m of out.matchAll(/^\{"error":"([a-z_]+)".*\}\nHTTP (\d{3})/gm)) seen.add(`${m[2]} ${m[1]}`);
    }
    expect([...seen].sort()).toEqual(['400 invalid_request', '401 invalid_signature', '404 binding_not_found', '404 role_not_found', '405 method_not_allowed']);
    for (const pair of seen) {
      const [status, code] = pair.split(' ') as [string, string];
      expect(errorCodesByStatus().get(Number(status)), pair).toContain(code);
    }
    // The GM endpoint was really asked, with the service's signature.
    expect(gm.failures).toEqual([]);
    expect(gm.callsFor(game.gameId)).toBeGreaterThan(0);
  });

  it("error table: the statuses OpenAPI documents for GET /v1/query-binding, each error with the catalogue's status", async () => {
    const text = readFileSync(GUIDE, 'utf8');
    const section = text.slice(text.indexOf('## 4. Errors'), text.indexOf('## 5.'));
    const rows = [...section.matchAll(/^\| (\d{3}) \| `([a-z_]+)` \|/gm)].map((m) => ({ status: Number(m[1]), code: m[2]! }));
    const catalogue = errorCodesByStatus();
    for (const r of rows) expect(catalogue.get(r.status), `${r.status} ${r.code}`).toContain(r.code);
    const doc = (await (await fetch(`${t.url}/openapi.json`)).json()) as { paths: Record<string, { get: { responses: Record<string, { 'x-error-codes'?: string[] }> } }> };
    const documented = Object.entries(doc.paths['/v1/query-binding']!.get.responses).filter(([s]) => Number(s) >= 400);
    // Every documented status is in the table, with every code a partner can get from it
    // (not_found is for unknown paths).
    for (const [status, r] of documented) {
      for (const code of r['x-error-codes'] ?? []) {
        if (code === 'not_found') continue;
        expect(rows, `${status} ${code} is missing from the guide's error table`).toContainEqual({ status: Number(status), code });
      }
    }
    // And rest-interface 4.4's list is all there.
    for (const code of ['invalid_request', 'invalid_signature', 'partner_disabled', 'binding_not_found', 'role_not_found', 'internal_error']) {
      expect(rows.map((r) => r.code)).toContain(code);
    }
  });
});
