import { loadConfig } from '../config/index.js';
import { IdGenerator } from '../lib/ids.js';
import { SecretBox } from '../lib/secret-box.js';
import { rotateSecrets } from '../secrets/rotate.js';
import { parse, positionals, type Command, type Io } from './io.js';
import { openServiceDatabase, serviceSecretsKey } from './service-data.js';

async function run(args: string[], io: Io): Promise<number> {
  const { values, positionals: rest } = parse(args, { 'dry-run': { type: 'boolean' } });
  positionals(rest, []);
  const dryRun = values['dry-run'] === true;
  const config = loadConfig(io.env);
  const { key, source } = serviceSecretsKey(config);
  const box = new SecretBox(key, config.secretsKeyPrevious ? [config.secretsKeyPrevious] : []);
  const database = openServiceDatabase(config);
  try {
    const report = await rotateSecrets(database.db, box, { ids: new IdGenerator(config.nodeId ?? undefined), now: Date.now(), dryRun });
    for (const c of report.columns) io.out(`${c.name}: ${c.resealed} ${dryRun ? 'to re-seal' : 're-sealed'}, ${c.current} already current\n`);
    io.out(
      `${dryRun ? 'dry run: would re-seal' : 're-sealed'} ${report.resealed} value(s) with key ${box.currentKeyId} (${source === 'SECRETS_KEY' ? 'SECRETS_KEY' : 'key file'})\n`,
    );
    return 0;
  } finally {
    await database.close();
  }
}

export const rotateSecretsCommand: Command = {
  name: 'rotate-secrets',
  summary: 're-seal every stored secret with SECRETS_KEY, in one transaction',
  help: `usage:
  combo-platform rotate-secrets [--dry-run]

  Re-seals every secret stored in the database (game and partner keys, national-system keys)
  with SECRETS_KEY, in one transaction; old values are opened with SECRETS_KEY_PREVIOUS.
  Step by step: docs/operations.md.`,
  run,
};
