/**
 * docs/architecture.md: every `sh` block is run in order, in the repository root, against a real
 * service (the layers' files, the check order of the pipeline, the OpenAPI document, an order
 * through the outbox to its delivery, the payment channel and admin route examples). The blocks
 * check their own output (`# => ` lines); this file then checks the delivery they caused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DB } from './helpers/db.js';
import { describeRun, GUIDES, runShellBlocks, shellBlocks, unmetExpectations } from './helpers/guides.js';
import { Receiver } from './helpers/receiver.js';
import { ADMIN_TOKEN, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

const DOC = 'docs/architecture.md';

let t: TestService;
let game: TestGame;
let receiver: Receiver;
beforeAll(async () => {
  t = await startService();
  game = await createGame(t, { sandbox_payments: true });
  receiver = await new Receiver({ keys: new Map([[game.gameId, [game.secret]]]), now: () => Date.now() }).start();
});
afterAll(async () => {
  await receiver?.close();
  await t?.stop();
});

describe(DOC, () => {
  const blocks = shellBlocks(DOC);
  it('has as many sh blocks as the runner expects', () => expect(blocks.length).toBe(GUIDES[DOC]!.shBlocks));

  it(`runs every sh block in order against a real service (${TEST_DB}), each printing what its "# =>" lines say`, async () => {
    const env = { COMBO_URL: t.url, ADMIN_TOKEN, GAME_ID: game.gameId, COMBO_SECRET_KEY: game.secret, NOTIFY_URL: `${receiver.url}/combo/notify` };
    const r = await runShellBlocks(blocks, TEST_DB, env, 200_000);
    expect(r.status, describeRun(r)).toBe(0);
    expect(r.ran).toEqual(blocks.map((_, i) => i));
    expect(unmetExpectations(blocks, r)).toEqual([]);
    const got = receiver.on('/combo/notify');
    expect(got.map((g) => [g.body?.notification_type, g.signatureProblem])).toEqual([['ship_order', null]]);
  }, 210_000);
});
