import type { Kysely, Transaction } from 'kysely';
import { recordAudit } from '../admin/audit.js';
import type { DB } from '../db/schema.js';
import type { IdGenerator } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';

/**
 * Every column that holds a SecretBox-sealed value, with the primary key that addresses its
 * row. A domain that adds a sealed column adds it here, so `rotate-secrets` re-seals it too.
 */
export const SEALED_COLUMNS: readonly { table: keyof DB; id: string; column: string }[] = [
  { table: 'game_keys', id: 'key_id', column: 'secret_enc' },
  { table: 'partner_keys', id: 'key_id', column: 'secret_enc' },
  { table: 'games', id: 'game_id', column: 'nppa_secret_enc' },
  { table: 'operators', id: 'operator_id', column: 'totp_secret' },
  // Keyed by (game_id, channel): the update's guard on the sealed value (random IV, so unique)
  // picks the one row of the game.
  { table: 'game_channels', id: 'game_id', column: 'secrets_enc' },
];

export interface RotationReport {
  /** Per `table.column`: values re-sealed, and values already sealed with the current key. */
  columns: { name: string; resealed: number; current: number }[];
  resealed: number;
  dryRun: boolean;
}

/**
 * Re-seals every sealed value with the box's current key, in ONE transaction: either every
 * value moves to the new key or (on any value that cannot be opened) nothing changes. Each
 * update is guarded by the old value, so a concurrent operator change is never overwritten
 * (that change was sealed by a running instance, with the current key).
 */
export async function rotateSecrets(
  db: Kysely<DB>,
  box: SecretBox,
  opts: { ids: IdGenerator; now: number; dryRun?: boolean },
): Promise<RotationReport> {
  const dryRun = opts.dryRun ?? false;
  return db.transaction().execute(async (trx) => {
    const columns: RotationReport['columns'] = [];
    for (const c of SEALED_COLUMNS) columns.push(await rotateColumn(trx, box, c, dryRun));
    const resealed = columns.reduce((n, c) => n + c.resealed, 0);
    if (!dryRun) {
      await recordAudit(trx, opts.ids, opts.now, {
        by: { actor: 'cli', address: null },
        game: null,
        action: 'secrets.rotate',
        target: `key:${box.currentKeyId}`,
        detail: { resealed, columns },
      });
    }
    return { columns, resealed, dryRun };
  });
}

async function rotateColumn(
  trx: Transaction<DB>,
  box: SecretBox,
  c: { table: keyof DB; id: string; column: string },
  dryRun: boolean,
): Promise<RotationReport['columns'][number]> {
  // The table and column names come from SEALED_COLUMNS above, never from input.
  const q = trx as unknown as Kysely<Record<string, Record<string, string | null>>>;
  const rows = await q.selectFrom(c.table).select([c.id, c.column]).where(c.column, 'is not', null).execute();
  let resealed = 0;
  let current = 0;
  for (const row of rows) {
    const id = row[c.id] as string;
    const sealed = row[c.column] as string;
    if (box.isCurrent(sealed)) {
      current++;
      continue;
    }
    let plain: string;
    try {
      plain = box.open(sealed);
    } catch (e) {
      throw new Error(`${c.table}.${c.column} of ${id}: ${(e as Error).message}; nothing was changed`);
    }
    if (!dryRun) {
      await q.updateTable(c.table).set({ [c.column]: box.seal(plain) }).where(c.id, '=', id).where(c.column, '=', sealed).execute();
    }
    resealed++;
  }
  return { name: `${c.table}.${c.column}`, resealed, current };
}

/** SECRETS_KEY (with SECRETS_KEY_PREVIOUS) cannot open what the database holds. */
export class SecretsKeyMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretsKeyMismatchError';
  }
}

/** A sealed value the box cannot open: its column and the key id that sealed it ('v1': unknown). */
export interface UnopenedSecret {
  column: string;
  keyId: string;
}

/**
 * Opens one stored value per key that sealed them (per key id; the key-less v1 form once), so
 * an instance started with the wrong key stops at start instead of reporting ready and
 * answering every signed request 500 (and using up notifications' retry windows). Returns the
 * first value it cannot open, or null.
 */
export async function findUnopenedSecret(db: Kysely<DB>, box: SecretBox): Promise<UnopenedSecret | null> {
  const q = db as unknown as Kysely<Record<string, Record<string, string | null>>>;
  for (const c of SEALED_COLUMNS) {
    const rows = await q.selectFrom(c.table).select(c.column).where(c.column, 'is not', null).execute();
    const oneOfEach = new Map<string, string>();
    for (const r of rows) {
      const sealed = r[c.column] as string;
      const kid = sealed.startsWith('v2:') ? (sealed.split(':')[1] as string) : 'v1';
      if (!oneOfEach.has(kid)) oneOfEach.set(kid, sealed);
    }
    for (const [kid, sealed] of oneOfEach) {
      try {
        box.open(sealed);
      } catch {
        return { column: `${c.table}.${c.column}`, keyId: kid };
      }
    }
  }
  return null;
}
