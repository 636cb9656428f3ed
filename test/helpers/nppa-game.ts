import { randomBytes } from 'node:crypto';
import type { StandIn } from './nppa-stand-in.js';
import { admin, createGame, signed, type TestGame, type TestService } from './service.js';

export interface NppaGame extends TestGame {
  appId: string;
  bizId: string;
  secretKey: string;
}

/**
 * A game with national-system credentials that the stand-in knows. `rateLimitPerSecond`: the
 * game's request limit, for tests that send bursts faster than the default 1,000 a second can
 * take on a fast machine.
 */
export async function createNppaGame(t: TestService, standIn: StandIn, opts: { secretKey?: string; rateLimitPerSecond?: number } = {}): Promise<NppaGame> {
  const game = await createGame(t);
  const creds = { appId: `app${randomBytes(6).toString('hex')}`, bizId: `biz${randomBytes(4).toString('hex')}`, secretKey: opts.secretKey ?? randomBytes(16).toString('hex') };
  const limit = opts.rateLimitPerSecond === undefined ? {} : { rate_limit_per_second: opts.rateLimitPerSecond };
  const r = await admin(t, 'PATCH', `/admin/v1/games/${game.gameId}`, { nppa: { app_id: creds.appId, biz_id: creds.bizId, secret_key: creds.secretKey }, ...limit });
  if (r.status !== 200) throw new Error(`patch nppa: ${r.status} ${r.text}`);
  standIn.addApp(creds);
  return { ...game, ...creds };
}

export async function enter(t: TestService, game: TestGame, comboId: string, sessionId: string): Promise<void> {
  const r = await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: comboId, session_id: sessionId });
  if (r.status !== 200) throw new Error(`enter: ${r.status} ${r.text}`);
}

export async function leave(t: TestService, game: TestGame, comboId: string, sessionId: string): Promise<void> {
  const r = await signed(t, game, 'POST', '/v1/server/leave-game', { combo_id: comboId, session_id: sessionId });
  if (r.status !== 200) throw new Error(`leave: ${r.status} ${r.text}`);
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}
