import { loadConfig } from '../config/index.js';
import { loadCredentials, runTestCases, testCases } from '../compliance/nppa-test.js';
import { SecretBox } from '../lib/secret-box.js';
import { CommandError, parse, positionals, required, str, UsageError, type Command, type Io } from './io.js';
import { openServiceDatabase, serviceSecretsKey } from './service-data.js';

const CASES = ['guest', 'auth', 'all'] as const;

async function run(args: string[], io: Io): Promise<number> {
  const { values, positionals: rest } = parse(args, {
    game: { type: 'string' },
    'base-url': { type: 'string' },
    code: { type: 'string' },
    case: { type: 'string' },
    pi: { type: 'string' },
  });
  positionals(rest, []);
  const gameId = required(values, 'game');
  const baseUrl = required(values, 'base-url');
  if (!/^https?:\/\/[^/]+/.test(baseUrl)) throw new UsageError(`--base-url must be an http(s) URL (got "${baseUrl}")`);
  const code = required(values, 'code');
  if (!/^[\w-]{1,128}$/.test(code)) throw new UsageError('--code must be 1 to 128 letters, digits, - or _');
  const pi = str(values, 'pi');
  const which = str(values, 'case') ?? (pi === undefined ? 'guest' : 'all');
  if (!(CASES as readonly string[]).includes(which)) throw new UsageError(`--case must be guest, auth or all (got "${which}")`);
  if (which !== 'guest' && !/^[0-9A-Za-z]{38}$/.test(pi ?? '')) throw new UsageError(`--pi (38 letters and digits) is required for --case ${which}`);

  const config = loadConfig(io.env);
  const box = new SecretBox(serviceSecretsKey(config).key);
  const database = openServiceDatabase(config);
  let creds;
  try {
    creds = await loadCredentials(database.db, box, gameId);
  } finally {
    await database.close();
  }
  if (typeof creds === 'string') throw new CommandError(creds);
  const url = `${baseUrl.replace(/\/+$/, '')}/test/collection/loginout/${code}`;
  const failed = await runTestCases(url, creds, testCases(which as (typeof CASES)[number], pi), (line) => io.out(`${line}\n`));
  return failed ? 1 : 0;
}

export const nppaTestCommand: Command = {
  name: 'nppa-test',
  summary: "run the national system's behaviour interface test cases for a game",
  help: `usage:
  combo-platform nppa-test --game G --base-url URL --code TESTCODE [--case guest|auth|all] [--pi PI]

  Sends the national system's behaviour-upload test cases to
  {base-url}/test/collection/loginout/{code} with the game's stored national-system credentials
  (DATABASE_URL and SECRETS_KEY or the key file in DATA_DIR, as the service uses), and prints
  each case's result:
    guest  a login and a logout reported as a guest (ct=2 with di)
    auth   a login and a logout of an authenticated player (ct=0 with --pi, the test pi)
  --case defaults to all when --pi is given, else to guest.
  Exit status 0 when every case passes, 1 when one fails. See docs/compliance.md.`,
  run,
};
