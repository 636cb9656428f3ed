import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNppaGame, type NppaGame } from './helpers/nppa-game.js';
import { startNppaStandIn, type StandIn } from './helpers/nppa-stand-in.js';
import { createGame, startService, type TestService } from './helpers/service.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..');
const SECRETS_KEY = randomBytes(32).toString('base64');
const PI = '1fffbjzos82bs9cnyj1dna7d6d29zg4esnh99u';

/** The real command, as an operator runs it (`npm run cli -- nppa-test ...`). */
async function cli(t: TestService, args: string[]): Promise<{ code: number; stdout: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'nppa-test', ...args], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: t.db.url, SECRETS_KEY },
    });
    return { code: 0, stdout: r.stdout };
  } catch (e) {
    const err = e as { code: number; stdout: string };
    return { code: err.code, stdout: err.stdout };
  }
}

describe('nppa-test command (national-system interface test cases)', () => {
  let standIn: StandIn;
  let t: TestService;
  let game: NppaGame;
  beforeAll(async () => {
    standIn = await startNppaStandIn();
    t = await startService({ env: { SECRETS_KEY } });
    game = await createNppaGame(t, standIn);
  });
  afterAll(async () => {
    await t?.stop();
    await standIn?.close();
  });

  it('runs the guest and the authenticated case against the test endpoint with the stored credentials', async () => {
    const r = await cli(t, ['--game', game.gameId, '--base-url', standIn.url, '--code', 'TC01', '--case', 'all', '--pi', PI]);
    expect(r.stdout).toContain('guest: PASS errcode=0');
    expect(r.stdout).toContain('auth: PASS errcode=0');
    expect(r.code).toBe(0);
    const reqs = standIn.requests.filter((q) => q.appId === game.appId);
    expect(reqs.map((q) => q.path)).toEqual(['/test/collection/loginout/TC01', '/test/collection/loginout/TC01']);
    const [guest, auth] = reqs;
    expect(guest!.items.map((i) => [i.bt, i.ct])).toEqual([[1, 2], [0, 2]]);
    expect(guest!.items.every((i) => i.di && !i.pi)).toBe(true);
    expect(auth!.items.map((i) => [i.bt, i.ct, i.pi])).toEqual([[1, 0, PI], [0, 0, PI]]);
    expect(standIn.violations).toEqual([]);
  });

  it('prints the national system\'s per-item errors and exits 1', async () => {
    standIn.itemFault = (item, appId) => (appId === game.appId && item.ct === 2 ? { errcode: 3009, errmsg: 'di missing' } : null);
    const r = await cli(t, ['--game', game.gameId, '--base-url', standIn.url, '--code', 'TC02', '--case', 'guest']);
    standIn.itemFault = null;
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('guest: FAIL errcode=0');
    expect(r.stdout).toContain('item 1: errcode=3009 errmsg=di missing');
  });

  it('refuses bad arguments (2) and games without credentials (1)', async () => {
    expect((await cli(t, ['--game', game.gameId, '--base-url', standIn.url, '--code', 'X', '--case', 'auth'])).code).toBe(2);
    expect((await cli(t, ['--game', game.gameId, '--base-url', 'ftp://x', '--code', 'X', '--case', 'guest'])).code).toBe(2);
    const plain = await createGame(t);
    const r = await cli(t, ['--game', plain.gameId, '--base-url', standIn.url, '--code', 'X', '--case', 'guest']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('has no national-system credentials');
  });
});
