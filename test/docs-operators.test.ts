/**
 * docs/guides/operators.md: every `sh` block is run in order, in the repository root, as an
 * operator runs them: the built service (`node dist/src/main.js`) and command line
 * (`node dist/src/cli.js`) as real processes, configured by the guide's own settings file, on
 * the suite's database ("sh sqlite" / "sh postgres" blocks in the run on that database). The
 * blocks check their own output (`# => ` lines); this file then checks the state they left.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/index.js';
import { SecretBox } from '../src/lib/secret-box.js';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { describeRun, GUIDES, runShellBlocks, shellBlocks, unmetExpectations, type GuideRun } from './helpers/guides.js';
import { ensureServiceBuilt, REPO_ROOT } from './helpers/spawn.js';

const GUIDE = 'docs/guides/operators.md';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

let db: TestDatabase;
let dir: string;
let databaseUrl: string;
beforeAll(async () => {
  ensureServiceBuilt();
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-ops-guide-'));
  if (TEST_DB === 'postgres') {
    db = await createTestDatabase();
    databaseUrl = db.url;
  } else databaseUrl = `sqlite:${dir}/data/combo.db`;
}, 120_000);
afterAll(async () => {
  // The guide stops the service it started; if a block failed first, stop it here (by its pid).
  const pidFile = path.join(dir, 'combo.pid');
  if (existsSync(pidFile)) {
    const pid = Number(readFileSync(pidFile, 'utf8'));
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await db?.drop();
  rmSync(dir, { recursive: true, force: true });
});

describe(GUIDE, () => {
  const blocks = shellBlocks(GUIDE);
  let run: GuideRun;

  it('has as many sh blocks as the runner expects, each for both databases or tagged for one', () => {
    expect(blocks.length).toBe(GUIDES[GUIDE]!.shBlocks);
    expect(blocks.filter((b) => b.tags.includes('sqlite')).length).toBeGreaterThan(0);
    expect(blocks.filter((b) => b.tags.includes('postgres')).length).toBeGreaterThan(0);
  });

  it(`runs every sh block for ${TEST_DB} in order, against real processes`, async () => {
    run = await runShellBlocks(blocks, TEST_DB, { COMBO_DIR: dir, PORT: String(await freePort()), DATABASE_URL: databaseUrl }, 400_000);
    expect(run.status, `${describeRun(run)}\n--- service log ---\n${readLog().slice(-4000)}`).toBe(0);
    expect(run.ran).toEqual(blocks.map((b, i) => (b.tags.length === 0 || b.tags.includes(TEST_DB) ? i : -1)).filter((i) => i >= 0));
  }, 410_000);

  const readLog = () => (existsSync(path.join(dir, 'combo.log')) ? readFileSync(path.join(dir, 'combo.log'), 'utf8') : '');

  it('every block printed what its "# =>" lines say', () => {
    expect(run, 'the run failed').toBeDefined();
    expect(unmetExpectations(blocks, run)).toEqual([]);
  });

  it('the restore brought back the backup: the product made after it is gone', () => {
    const restore = blocks.findIndex((b) => b.tags.includes(TEST_DB) && b.body.includes('gem_90'));
    const out = run.outputs.get(restore) ?? '';
    expect(out).toContain('gem_60');
    expect(out).not.toContain('gem_90');
  });

  it('left the state the guide describes: one game key, every secret sealed with the new SECRETS_KEY, clean stops', async () => {
    expect(run.status).toBe(0);
    const env = readFileSync(path.join(dir, 'combo.env'), 'utf8');
    expect(env).not.toMatch(/^SECRETS_KEY_PREVIOUS=/m);
    const key = Buffer.from(/^SECRETS_KEY=(.+)$/m.exec(env)![1]!, 'base64');
    const keyId = new SecretBox(key).currentKeyId;
    const database = openDatabase(databaseUrl);
    try {
      const keys = await database.db.selectFrom('game_keys').selectAll().where('game_id', '=', 'demo').execute();
      expect(keys).toHaveLength(1);
      for (const k of keys) expect(k.secret_enc.startsWith(`v2:${keyId}:`), k.secret_enc.slice(0, 12)).toBe(true);
    } finally {
      await database.close();
    }
    // The service was started 6 times (start, restore, upgrade, admin token, SECRETS_KEY twice)
    // and stopped cleanly each time; nothing was logged at error level.
    const lines = readLog().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(lines.filter((l) => l.msg === 'service listening')).toHaveLength(6);
    expect(lines.filter((l) => l.msg === 'stopped')).toHaveLength(6);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });
});
