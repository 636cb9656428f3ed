import { describe, expect, it } from 'vitest';
import { RoleCache } from '../../src/bindings/role-cache.js';
import type { Role } from '../../src/bindings/schemas.js';
import { ManualClock } from '../../src/lib/clock.js';

const role = (role_id: string, role_name: string): Role => ({ server_id: 1, server_name: 's1', role_id, role_name, role_level: 1, avatar_url: '', create_time: 0 });

describe('RoleCache keys', () => {
  it('keeps apart players and roles whose ids would read alike joined', async () => {
    const cache = new RoleCache({ clock: new ManualClock(1_000), ttlMs: 300_000, staleTtlMs: 3_600_000 });
    // (game g, combo "a:1", role "x") against (game g, combo "a", role "1:x"), and the same
    // with the game id taking part of the combo id.
    const players = [
      ['g', 'a:1', 'x'],
      ['g', 'a', '1:x'],
      ['g:a', '1', 'x'],
      ['g', 'a:1:x', ''],
    ] as const;
    let calls = 0;
    for (const [game, combo, roleId] of players) {
      const fetch = async () => {
        calls++;
        return [role(roleId, `${game}/${combo}/${roleId}`)];
      };
      const got = await cache.get(game, combo, roleId, fetch);
      expect(got.role.role_name).toBe(`${game}/${combo}/${roleId}`);
    }
    expect(calls).toBe(players.length);
    // Each is now served from the cache, as its own role.
    for (const [game, combo, roleId] of players) {
      const got = await cache.get(game, combo, roleId, () => Promise.reject(new Error('not cached')));
      expect(got).toEqual({ role: role(roleId, `${game}/${combo}/${roleId}`), stale: false });
    }
  });
});
