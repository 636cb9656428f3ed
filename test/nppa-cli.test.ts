import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
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

/** The real command line, as an operator runs it (`npm run cli -- <command> ...`). */
async function command(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: ROOT, env: { ...process.env, ...env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

const cli = (t: TestService, args: string[]) => command(['nppa-test', ...args], { DATABASE_URL: t.db.url, SECRETS_KEY });

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

  it('without --case: all cases with --pi, the guest case alone without it (the synopsis in docs/cli.md)', async () => {
    const guestOnly = await cli(t, ['--game', game.gameId, '--base-url', standIn.url, '--code', 'TC02']);
    expect([guestOnly.code, guestOnly.stdout.trim()]).toEqual([0, 'guest: PASS errcode=0 errmsg=OK']);
    const both = await cli(t, ['--game', game.gameId, '--base-url', standIn.url, '--code', 'TC03', '--pi', PI]);
    expect(both.code).toBe(0);
    expect(both.stdout.split('\n').filter(Boolean).map((l) => l.split(':')[0])).toEqual(['guest', 'auth']);
  });

  it('refuses bad arguments (2, "error:" and the help on stderr) and games without credentials (1)', async () => {
    const usage = [
      [['--case', 'auth'], '--pi (38 letters and digits) is required for --case auth'],
      [['--case', 'some'], '--case must be guest, auth or all'],
      [['--base-url', 'ftp://x'], '--base-url must be an http(s) URL'],
      [['--code', 'a b'], '--code must be'],
      [['--bogus'], "Unknown option '--bogus'"],
    ] as const;
    for (const [extra, message] of usage) {
      const args = ['--game', game.gameId, '--base-url', standIn.url, '--code', 'X', ...extra];
      const r = await cli(t, args);
      expect([r.code, r.stdout], extra.join(' ')).toEqual([2, '']);
      expect(r.stderr).toContain(`error: ${message}`);
      expect(r.stderr).toContain('usage:\n  combo-platform nppa-test --game G');
    }
    const plain = await createGame(t);
    const r = await cli(t, ['--game', plain.gameId, '--base-url', standIn.url, '--code', 'X', '--case', 'guest']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('has no national-system credentials');
  });
});

describe('maintenance commands never create the service\'s data', () => {
  // A mistyped DATABASE_URL or DATA_DIR must be an error, not a new empty database or a new
  // secrets key (which would then seal nothing the service can open).
  it.each([
    ['nppa-test', ['nppa-test', '--game', 'g1', '--base-url', 'http://127.0.0.1:9', '--code', 'X']],
    ['rotate-secrets --dry-run', ['rotate-secrets', '--dry-run']],
    ['rotate-secrets', ['rotate-secrets']],
  ])('%s: a missing database file or key file is exit 1 naming it, and nothing is created', async (_name, args) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'combo-cli-none-'));
    try {
      const missingDb = path.join(dir, 'typo.db');
      const noDb = await command(args, { DATABASE_URL: `sqlite:${missingDb}`, SECRETS_KEY });
      expect([noDb.code, noDb.stderr.trim()]).toEqual([1, `error: no database file at ${missingDb} (DATABASE_URL)`]);
      const noKey = await command(args, { DATABASE_URL: `sqlite:${missingDb}`, SECRETS_KEY: '', DATA_DIR: dir });
      expect(noKey.code).toBe(1);
      expect(noKey.stderr).toContain(`SECRETS_KEY is not set and there is no key file at ${path.join(dir, 'secrets.key')}`);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
