/**
 * The README's quick start, run as written: its `sh` blocks in order, as one bash script in the
 * repository root, through the guides' runner. `npm start` starts the real service (on the
 * build at hand: npm's pre-scripts are skipped, so `prestart`'s full build does not run here),
 * the CLI creates the game and signs the order, `curl` creates and pays it, and `listen`
 * receives its notification. The test gives only free ports, a fresh data directory and, on
 * PostgreSQL, the database; it then checks the order the quick start left.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/index.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { describeRun, GUIDES, runShellBlocks, shellBlocks, unmetExpectations, type GuideRun } from './helpers/guides.js';
import { freePort } from './helpers/ports.js';
import { ensureServiceBuilt } from './helpers/spawn.js';

const README = 'README.md';

let db: TestDatabase | undefined;
let dir: string;
let databaseUrl: string;
beforeAll(async () => {
  ensureServiceBuilt();
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-quick-start-'));
  if (TEST_DB === 'postgres') {
    db = await createTestDatabase();
    databaseUrl = db.url;
  } else databaseUrl = `sqlite:${dir}/combo.db`;
}, 120_000);
afterAll(async () => {
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe('README.md quick start', () => {
  const blocks = shellBlocks(README);
  let run: GuideRun;

  it('has as many sh blocks as the runner expects', () => expect(blocks.length).toBe(GUIDES[README]!.shBlocks));

  it(`runs every sh block in order: from npm start to a paid order whose notification the listener verified (${TEST_DB})`, async () => {
    const env = {
      PORT: String(await freePort()),
      LISTEN_PORT: String(await freePort()),
      DATA_DIR: dir,
      DATABASE_URL: databaseUrl,
      npm_config_ignore_scripts: 'true',
    };
    run = await runShellBlocks(blocks, TEST_DB, env, 240_000, { ownGroup: true });
    expect(run.status, describeRun(run)).toBe(0);
    expect(run.ran).toEqual(blocks.map((_, i) => i));
    expect(unmetExpectations(blocks, run)).toEqual([]);
    // What the listener printed: the notification, its signature verified, answered 200.
    expect(run.stdout).toMatch(/^\S+Z POST \/notify ship_order ntf_\S+ order \d+: signature verified \(game demo\), answered 200$/m);
    expect(run.stderr).toMatch(/listening on http:\/\/127\.0\.0\.1:\d+\/ for notifications; exits after 1 verified/);
  }, 250_000);

  it('left one delivered sandbox order, its notification acknowledged on the first attempt', async () => {
    expect(run?.status).toBe(0);
    const database = openDatabase(databaseUrl);
    try {
      const orders = await database.db.selectFrom('orders').selectAll().where('game_id', '=', 'demo').execute();
      expect(orders).toHaveLength(1);
      expect(orders[0]).toMatchObject({ reference_id: 'quickstart-1', product_id: 'gem_60', amount: 600, is_sandbox: 1, status: 'delivered' });
      const notifications = await database.db.selectFrom('notifications').selectAll().where('order_id', '=', orders[0]!.order_id).execute();
      expect(notifications.map((n) => [n.type, n.status, n.attempts])).toEqual([['ship_order', 'succeeded', 1]]);
    } finally {
      await database.close();
    }
  });
});
