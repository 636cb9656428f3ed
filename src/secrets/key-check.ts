import path from 'node:path';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { SecretsKey } from '../lib/secrets-key.js';
import { findUnopenedSecret, SecretsKeyMismatchError } from './rotate.js';

const ROTATION_DOC = 'docs/operations.md, "Rotating SECRETS_KEY"';

/**
 * Stops a start whose secrets key does not open the stored secrets (SecretsKeyMismatchError,
 * saying which key was used, which one sealed them and where it was, and what to set), and
 * records where the key in use came from (sealing_keys), so a later start with another key can
 * name it. `key` is null when the caller only has the key bytes (tests): nothing is recorded.
 */
export async function checkSecretsKey(db: Kysely<DB>, box: SecretBox, key: SecretsKey | null, now: number): Promise<void> {
  const unopened = await findUnopenedSecret(db, box);
  if (unopened) {
    const sealedBy = unopened.keyId === 'v1' ? undefined : await db.selectFrom('sealing_keys').select('source').where('key_id', '=', unopened.keyId).executeTakeFirst();
    throw new SecretsKeyMismatchError(mismatchMessage(unopened.column, unopened.keyId, box.currentKeyId, key, sealedBy?.source));
  }
  if (key) {
    await db.insertInto('sealing_keys').values({ key_id: box.currentKeyId, source: key.source, first_used_at: now }).onConflict((oc) => oc.column('key_id').doNothing()).execute();
  }
}

/** One line: the key used, the key that sealed the values and where it was, what to set. */
export function mismatchMessage(column: string, sealedKeyId: string, usedKeyId: string, key: SecretsKey | null, sealedSource: string | undefined): string {
  const sealed = sealedKeyId === 'v1' ? 'an older key' : `key id ${sealedKeyId}`;
  if (!key || key.source === 'SECRETS_KEY') {
    const known = sealedSource ? `; that key was ${describeSource(sealedSource)}` : '';
    return `${column} holds values sealed with ${sealed}, which SECRETS_KEY (key id ${usedKeyId}) and SECRETS_KEY_PREVIOUS do not open${known}: ${whatToSet(sealedSource)} (${ROTATION_DOC})`;
  }
  let used = `the key file ${key.source} (key id ${usedKeyId}; SECRETS_KEY is not set)`;
  if (key.created) {
    used += `, created just now because DATA_DIR=${key.dataDirSetting} held no key file`;
    if (!path.isAbsolute(key.dataDirSetting)) used += ` (a relative DATA_DIR, resolved from the working directory ${key.cwd})`;
  }
  const known = sealedSource ? `, which was ${describeSource(sealedSource)}` : ' (where that key was is not recorded)';
  return `${column} holds values sealed with ${sealed}${known}; this start used ${used}, which does not open them: ${whatToSet(sealedSource)} (${ROTATION_DOC})`;
}

function describeSource(source: string): string {
  return source === 'SECRETS_KEY' ? 'SECRETS_KEY' : `the key file ${source}`;
}

function whatToSet(sealedSource: string | undefined): string {
  if (sealedSource === 'SECRETS_KEY') return 'set SECRETS_KEY to that key';
  if (sealedSource) return `set DATA_DIR=${path.dirname(sealedSource)} (an absolute path), or SECRETS_KEY to that file's contents`;
  return 'set SECRETS_KEY to the key they were sealed with, or DATA_DIR (an absolute path) to the data directory that holds its key file';
}
