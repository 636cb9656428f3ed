/**
 * Every `sh` block of the guides is run, in order, against a real service (issue "Operator
 * tooling", point 5: examples cannot drift from the code). A block fails the test when it exits
 * non-zero; the test then checks the effects the guide promises.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPartner, type TestPartner } from './helpers/partners.js';
import { Receiver } from './helpers/receiver.js';
import { ADMIN_TOKEN, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

function shellBlocks(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

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
  it('has examples', () => expect(blocks.length).toBeGreaterThanOrEqual(5));

  it('runs every example against a real service', async () => {
    const env = {
      ...process.env,
      COMBO_URL: t.url,
      ADMIN_TOKEN,
      GAME_ID: game.gameId,
      COMBO_SECRET_KEY: game.secret,
      PARTNER_ID: partner.partnerId,
      NOTIFY_URL: `${receiver.url}/combo/notify`,
    };
    // The blocks run as one script, in order: later blocks use the variables of earlier ones.
    // Asynchronous: the service under test runs in this process and must keep answering.
    const r = await new Promise<{ status: number | null; out: string }>((resolve) => {
      const child = spawn('bash', ['-euo', 'pipefail', '-c', blocks.join('\n')], { env });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      child.on('close', (status) => resolve({ status, out }));
    });
    expect(r.status, r.out).toBe(0);
  }, 200_000);

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
