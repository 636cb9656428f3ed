import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.js';
import type { SecretBox } from '../lib/secret-box.js';
import { nppaDeviceId } from './identity.js';
import { itemResults, NppaClient, type BehaviourItem, type NppaCredentials } from './nppa-client.js';

export interface Case {
  name: 'guest' | 'auth';
  items: BehaviourItem[];
}

/**
 * Sends each case to the national system's test endpoint `url` (its
 * `/test/collection/loginout/{code}`) and reports one line per case, and one per refused item.
 * Returns how many cases failed.
 */
export async function runTestCases(url: string, creds: NppaCredentials, list: Case[], out: (line: string) => void): Promise<number> {
  const client = new NppaClient();
  try {
    let failed = 0;
    for (const c of list) {
      try {
        const answer = await client.sendBehaviour(url, creds, c.items, Date.now());
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
    return failed;
  } finally {
    await client.close();
  }
}

/** The test cases: per case, a login then a logout of one session, one second apart, ending now. */
export function testCases(which: 'guest' | 'auth' | 'all', pi: string | undefined): Case[] {
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

/** The game's stored national-system credentials, opened with the service's secrets key; a message when it has none. */
export async function loadCredentials(db: Kysely<DB>, box: SecretBox, gameId: string): Promise<NppaCredentials | string> {
  const game = await db
    .selectFrom('games')
    .select(['nppa_app_id', 'nppa_biz_id', 'nppa_secret_enc'])
    .where('game_id', '=', gameId)
    .executeTakeFirst();
  if (!game) return `game ${gameId} not found`;
  if (!game.nppa_app_id || !game.nppa_biz_id || !game.nppa_secret_enc) {
    return `game ${gameId} has no national-system credentials (PATCH /admin/v1/games/${gameId} {"nppa": {...}})`;
  }
  try {
    return { appId: game.nppa_app_id, bizId: game.nppa_biz_id, secretKey: box.open(game.nppa_secret_enc) };
  } catch {
    return 'the secret key could not be opened: use the SECRETS_KEY (or DATA_DIR key file) of the service';
  }
}
