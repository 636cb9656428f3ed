/**
 * docs/guides/payments.md: every `sh` block is run in order against a real service, with an
 * App Store played by the test (its own certificate chain in APPLE_ROOT_CERTS) that signed the
 * transaction the guide's client submits. The blocks check their own answers (`# => ` lines);
 * this file checks the state they left.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppAccountTokens } from '../src/payments/apple/store.js';
import { makeAppleChain, transaction } from './helpers/apple.js';
import { TEST_DB } from './helpers/db.js';
import { describeRun, GUIDES, runShellBlocks, shellBlocks, unmetExpectations, type GuideRun } from './helpers/guides.js';
import { createOrder, paymentsOf, statusOf, type CreatedOrder } from './helpers/orders.js';
import { ADMIN_TOKEN, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

const GUIDE = 'docs/guides/payments.md';
const apple = makeAppleChain('guide');
let t: TestService;
let game: TestGame;
let order: CreatedOrder;
let signedTransaction: string;

beforeAll(async () => {
  t = await startService({ env: { APPLE_ROOT_CERTS: apple.rootDer } });
  // A game as an operator creates it: no channel.
  game = await createGame(t, { sandbox_payments: false });
  order = await createOrder(t, game);
  // What StoreKit gives the app: a purchase made with the order's appAccountToken (the one
  // /v1/client/pay answers in the guide), signed by the App Store.
  const token = await new AppAccountTokens(t.service.database).forOrder(order.order_id, Date.now());
  signedTransaction = apple.sign(transaction({ bundleId: 'com.example.game', productId: 'com.example.game.gems60', appAccountToken: token, environment: 'Sandbox' }));
});
afterAll(async () => t?.stop());

describe(GUIDE, () => {
  const blocks = shellBlocks(GUIDE);
  let run: GuideRun;

  it('has as many sh blocks as the runner expects', () => expect(blocks.length).toBe(GUIDES[GUIDE]!.shBlocks));

  it(`runs every sh block in order against a real service (${TEST_DB})`, async () => {
    run = await runShellBlocks(
      blocks,
      TEST_DB,
      { COMBO_URL: t.url, ADMIN_TOKEN, GAME_ID: game.gameId, ORDER_TOKEN: order.order_token, SIGNED_TRANSACTION: signedTransaction },
      120_000,
    );
    expect(run.status, describeRun(run)).toBe(0);
    expect(run.ran).toEqual(blocks.map((_, i) => i));
  }, 130_000);

  it('every block printed what its "# =>" lines say', () => {
    expect(run, 'the run failed').toBeDefined();
    expect(unmetExpectations(blocks, run)).toEqual([]);
  });

  it('left the order paid once, through apple, as a sandbox purchase', async () => {
    expect(['paid', 'delivered']).toContain(await statusOf(t, order.order_id));
    expect(await paymentsOf(t, order.order_id)).toMatchObject([{ provider: 'apple', status: 'accepted', environment: 'Sandbox' }]);
  });
});
