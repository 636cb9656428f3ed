import type { Kysely } from 'kysely';

/**
 * sealing_keys: where each key that sealed stored secrets came from (`source`: 'SECRETS_KEY' or
 * the key file's absolute path), by key id (SecretBox's fingerprint, which every sealed value
 * carries). A start whose key does not open the stored secrets then names the key they need
 * and where it was (src/secrets/key-check.ts): a relative DATA_DIR read from another working
 * directory makes a new key file, which opens nothing.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sealing_keys')
    .addColumn('key_id', 'text', (c) => c.primaryKey())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('first_used_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(): Promise<void> {
  throw new Error('migrations run forward only; restore a backup to go back');
}
