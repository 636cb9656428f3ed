/**
 * Every `sh` block of the guides is run, in order, against a real service (issue "Operator
 * tooling", point 5: examples cannot drift from the code). A block fails the test when it exits
 * non-zero; the test then checks the effects the guide promises. This file runs
 * docs/guides/game-backend.md and checks that every guide has its runner (test/helpers/guides.ts);
 * the partner and operator guides run in test/docs-partners.test.ts and
 * test/docs-operators.test.ts.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Role } from '../src/bindings/schemas.js';
import { TEST_DB } from './helpers/db.js';
import { describeRun, GUIDES, runShellBlocks, shellBlocks, unmetExpectations } from './helpers/guides.js';
import { createPartner, type TestPartner } from './helpers/partners.js';
import { Receiver } from './helpers/receiver.js';
import { ADMIN_TOKEN, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

describe('docs/guides', () => {
  it('every guide has a runner, and each has the number of sh blocks its runner expects', () => {
    const files = readdirSync('docs/guides').filter((f) => f.endsWith('.md')).map((f) => `docs/guides/${f}`).sort();
    expect(files).toEqual(Object.keys(GUIDES).filter((f) => f.startsWith('docs/guides/')).sort());
    for (const [file, { shBlocks, test }] of Object.entries(GUIDES)) {
      expect(existsSync(test), test).toBe(true);
      // shellBlocks also refuses shell examples under another tag (bash, console...): they would not run.
      expect(shellBlocks(file).length, `${file}: sh blocks (update GUIDES in test/helpers/guides.ts and ${test} together)`).toBe(shBlocks);
    }
  });

  // The Go SDK's configuration type is combo.Config, and it has no GmError_RoleNotFound in the
  // releases integrators run (issue 45: an outside run of the published SDKs); the guide names
  // the wire answer instead.
  it('the game guide names no SDK type or constant the SDKs do not have', () => {
    const guide = readFileSync('docs/guides/game-backend.md', 'utf8');
    expect(guide).not.toContain('combo.Options');
    expect(guide).not.toContain('GmError_RoleNotFound');
    expect(guide).toContain('combo.Config{');
    // The Combo-only methods are credited to the Node.js SDK alone.
    expect(guide).not.toMatch(/the SDKs'? (methods|have|provide)[^.]*(SendOtp|sendOtp)/i);
  });

  it('the game guide lists each ListRoles role field with its JSON type', () => {
    const guide = readFileSync('docs/guides/game-backend.md', 'utf8');
    const types: Record<string, string> = { integer: 'integer', string: 'string' };
    for (const [field, schema] of Object.entries(Role.properties)) {
      const row = guide.split('\n').find((l) => l.startsWith(`| \`${field}\` |`));
      expect(row, field).toBeDefined();
      expect(row, field).toContain(types[(schema as { type: string }).type] as string);
    }
  });

  it('refuses an sh block that names a fixed path under /tmp (concurrent runs would share the file)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-guide-check-'));
    try {
      const guide = (block: string) => {
        const file = path.join(dir, 'guide.md');
        writeFileSync(file, `# Guide\n\n\`\`\`sh\n${block}\n\`\`\`\n`);
        return () => shellBlocks(file);
      };
      expect(guide('curl -sS "$COMBO_URL/healthz" | tee /tmp/answer.json')).toThrow(/fixed path under \/tmp/);
      expect(guide('cmp - /tmp/answer.json')).toThrow(/fixed path under \/tmp/);
      expect(guide('OUT="/tmp/answer.json"')).toThrow(/fixed path under \/tmp/);
      expect(guide('OUT=$(mktemp) && curl -sS "$COMBO_URL/healthz" > "$OUT"')().length).toBe(1);
      expect(guide('ORDER=$(curl -sS "$COMBO_URL/healthz")')().length).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

let t: TestService;
let game: TestGame;
let partner: TestPartner;
let receiver: Receiver;
beforeAll(async () => {
  t = await startService();
  game = await createGame(t);
  partner = await createPartner(t, [game.gameId]);
  receiver = await new Receiver({ keys: new Map([[game.gameId, [game.secret]]]), now: () => Date.now() }).start();
});
afterAll(async () => {
  await receiver?.close();
  await t?.stop();
});

describe('docs/guides/game-backend.md', () => {
  const blocks = shellBlocks('docs/guides/game-backend.md');
  it('has as many sh blocks as the runner expects', () => expect(blocks.length).toBe(GUIDES['docs/guides/game-backend.md']!.shBlocks));

  it(`runs every example against a real service (${TEST_DB})`, async () => {
    const env = {
      COMBO_URL: t.url,
      ADMIN_TOKEN,
      GAME_ID: game.gameId,
      COMBO_SECRET_KEY: game.secret,
      PARTNER_ID: partner.partnerId,
      NOTIFY_URL: `${receiver.url}/combo/notify`,
    };
    // The blocks run as one script, in order: later blocks use the variables of earlier ones.
    const r = await runShellBlocks(blocks, TEST_DB, env, 200_000);
    expect(r.status, describeRun(r)).toBe(0);
    expect(r.ran).toEqual(blocks.map((_, i) => i));
    expect(unmetExpectations(blocks, r)).toEqual([]);
  }, 210_000);

  it('left what the guide says it does', async () => {
    const db = t.service.database.db;
    const order = await db.selectFrom('orders').selectAll().where('game_id', '=', game.gameId).where('reference_id', '=', 'order-20261123-0001').execute();
    expect(order).toHaveLength(1);
    expect(order[0]).toMatchObject({ combo_id: 'player-1', context: 'guide', status: 'created' });
    const session = await db.selectFrom('sessions').selectAll().where('game_id', '=', game.gameId).executeTakeFirstOrThrow();
    expect(session.left_at).not.toBeNull();
    const binding = await db.selectFrom('bindings').selectAll().where('game_id', '=', game.gameId).executeTakeFirstOrThrow();
    expect(binding).toMatchObject({ partner_id: partner.partnerId, partner_user_id: 'partner-user-42', role_id: 'role-1' });
    const got = receiver.on('/combo/notify');
    expect(got).toHaveLength(1);
    expect(got[0]!.signatureProblem).toBeNull();
  });
});
