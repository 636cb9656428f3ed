import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config/index.js';
import { openDatabase } from '../db/index.js';
import { SecretBox } from '../lib/secret-box.js';
import { resolveSecretsKey } from '../lib/secrets-key.js';
import { nppaDeviceId } from './identity.js';
import { itemResults, NppaClient, type BehaviourItem, type NppaCredentials } from './nppa-client.js';

export const NPPA_TEST_USAGE = `usage: combo-platform nppa-test --game GAME_ID --base-url URL --code TEST_CODE [--case guest|auth|all] [--pi PI]

Runs the national system's behaviour-upload interface test cases for a game, with the game's
stored credentials (DATABASE_URL and SECRETS_KEY or the key file under DATA_DIR, as the service),
against {base-url}/test/collection/loginout/{code}:
  guest  a login and a logout reported as a guest (ct=2 with di)
  auth   a login and a logout of an authenticated player (ct=0 with --pi, the test pi)
`;

interface Case {
  name: 'guest' | 'auth';
  items: BehaviourItem[];
}

/**
 * The `nppa-test` command. Returns the exit status: 0 every case passed, 1 a case failed or the
 * game cannot be used, 2 bad arguments.
 */
export async function runNppaTest(argv: string[], env: Record<string, string | undefined>, out: (line: string) => void): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      options: { game: { type: 'string' }, 'base-url': { type: 'string' }, code: { type: 'string' }, case: { type: 'string', default: 'all' }, pi: { type: 'string' }, help: { type: 'boolean' } },
    }).values;
  } catch (e) {
    out(`${(e as Error).message}\n\n${NPPA_TEST_USAGE}`);
    return 2;
  }
  if (args.help) {
    out(NPPA_TEST_USAGE);
    return 0;
  }
  const which = args.case as string;
  const problems: string[] = [];
  if (!args.game) problems.push('--game is required');
  if (!args['base-url'] || !/^https?:\/\/[^/]+/.test(args['base-url'])) problems.push('--base-url must be an http(s) URL');
  if (!args.code || !/^[\w-]{1,128}$/.test(args.code)) problems.push('--code is required (letters, digits, - and _)');
  if (!['guest', 'auth', 'all'].includes(which)) problems.push('--case must be guest, auth or all');
  if (which !== 'guest' && !/^[0-9A-Za-z]{38}$/.test(args.pi ?? '')) problems.push('--pi (38 characters) is required for the auth case');
  if (problems.length) {
    out(`${problems.join('\n')}\n\n${NPPA_TEST_USAGE}`);
    return 2;
  }

  const creds = await loadCredentials(args.game as string, env);
  if (typeof creds === 'string') {
    out(creds);
    return 1;
  }
  const url = `${(args['base-url'] as string).replace(/\/+$/, '')}/test/collection/loginout/${args.code}`;
  const client = new NppaClient();
  try {
    let failed = 0;
    for (const c of cases(which, args.pi)) {
      const now = Date.now();
      try {
        const answer = await client.sendBehaviour(url, creds, c.items, now);
        const items = itemResults(answer);
        const ok = answer.errcode === 0 && items.length === 0;
        if (!ok) failed++;
        out(`${c.name}: ${ok ? 'PASS' : 'FAIL'} errcode=${answer.errcode} errmsg=${answer.errmsg}`);
        for (const r of items) out(`  item ${r.no}: errcode=${r.errcode} errmsg=${r.errmsg}`);
      } catch (e) {
        failed++;
        out(`${c.name}: FAIL ${(e as Error).message}`);
      }
    }
    return failed ? 1 : 0;
  } finally {
    await client.close();
  }
}

/** A login then a logout of one session, one second apart, ending now. */
function cases(which: string, pi: string | undefined): Case[] {
  const now = Math.floor(Date.now() / 1000);
  const session = (ct: 0 | 2) => {
    const si = randomBytes(16).toString('hex');
    const who = ct === 0 ? { pi: pi as string } : { di: nppaDeviceId(`nppa-test-${si}`) };
    return [
      { no: 1, si, bt: 1 as const, ot: now - 1, ct, ...who },
      { no: 2, si, bt: 0 as const, ot: now, ct, ...who },
    ];
  };
  const out: Case[] = [];
  if (which !== 'auth') out.push({ name: 'guest', items: session(2) });
  if (which !== 'guest') out.push({ name: 'auth', items: session(0) });
  return out;
}

/** The game's stored national-system credentials, opened with the service's secrets key. */
async function loadCredentials(gameId: string, env: Record<string, string | undefined>): Promise<NppaCredentials | string> {
  const config = loadConfig(env);
  const { key } = resolveSecretsKey(config.secretsKey, config.dataDir, config.production);
  const database = openDatabase(config.databaseUrl, { sqliteSynchronous: config.sqliteSynchronous });
  try {
    const game = await database.db
      .selectFrom('games')
      .select(['nppa_app_id', 'nppa_biz_id', 'nppa_secret_enc'])
      .where('game_id', '=', gameId)
      .executeTakeFirst();
    if (!game) return `game ${gameId} not found`;
    if (!game.nppa_app_id || !game.nppa_biz_id || !game.nppa_secret_enc) {
      return `game ${gameId} has no national-system credentials (PATCH /admin/v1/games/${gameId} {"nppa": {...}})`;
    }
    let secretKey: string;
    try {
      secretKey = new SecretBox(key).open(game.nppa_secret_enc);
    } catch {
      return 'the secret key could not be opened: use the SECRETS_KEY (or DATA_DIR key file) of the service';
    }
    return { appId: game.nppa_app_id, bizId: game.nppa_biz_id, secretKey };
  } finally {
    await database.close();
  }
}
