import { runNppaTest } from '../compliance/nppa-test.js';
import type { Command, Io } from './io.js';

export const nppaTestCommand: Command = {
  name: 'nppa-test',
  summary: "run the national system's behaviour interface test cases for a game",
  help: `usage:
  combo-platform nppa-test --game G --base-url URL --code TESTCODE [--case guest|auth|all] [--pi PI]

  Sends the guest (ct=2, di) and authenticated (ct=0, pi) behaviour test cases to
  {base-url}/test/collection/loginout/{code} with the game's stored national-system credentials
  (DATABASE_URL and SECRETS_KEY or the key file in DATA_DIR, as the service uses), and prints
  each case's result. Exit status 0 when every case passes. See docs/compliance.md.`,
  run: (args: string[], io: Io) => runNppaTest(args, io.env, (line) => io.out(`${line}\n`)),
};
