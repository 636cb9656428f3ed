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

describe('RoleCache answers', () => {
  it('serves the first of a role id listed twice, fresh and from the cache alike', async () => {
    const cache = new RoleCache({ clock: new ManualClock(1_000), ttlMs: 300_000, staleTtlMs: 3_600_000 });
    const fetch = async () => [role('r1', 'first'), role('r1', 'second')];
    expect((await cache.get('g', 'c', 'r1', fetch)).role.role_name).toBe('first');
    expect((await cache.get('g', 'c', 'r1', () => Promise.reject(new Error('not cached')))).role.role_name).toBe('first');
  });

  it('holds at most maxRoles roles over all players, dropping the oldest players first', async () => {
    const cache = new RoleCache({ clock: new ManualClock(1_000), ttlMs: 300_000, staleTtlMs: 3_600_000, maxRoles: 10 });
    const many = (n: number) => async () => Array.from({ length: n }, (_, i) => role(`r${i}`, `n${i}`));
    await cache.get('g', 'a', 'r0', many(4));
    await cache.get('g', 'b', 'r0', many(4));
    expect(cache.heldRoles()).toBe(8);
    await cache.get('g', 'c', 'r0', many(4)); // 12 > 10: player a goes
    expect(cache.heldRoles()).toBe(8);
    let calls = 0;
    const counted = async () => (calls++, [role('r0', 'again')]);
    expect((await cache.get('g', 'b', 'r0', counted)).role.role_name).toBe('n0');
    expect(calls).toBe(0);
    expect((await cache.get('g', 'a', 'r0', counted)).role.role_name).toBe('again');
    expect(calls).toBe(1);
    // An answer larger than the whole budget is served, not kept.
    expect((await cache.get('g', 'd', 'r0', many(11))).role.role_name).toBe('n0');
    expect((await cache.get('g', 'd', 'r0', counted)).role.role_name).toBe('again');
    // Replacing a player's list counts its new size, not both.
    await cache.get('g', 'e', 'r0', many(2));
    const before = cache.heldRoles();
    await cache.get('g', 'e', 'r2', many(3)); // r2 not in the cached list: fetched again
    expect(cache.heldRoles()).toBe(before + 1);
  });
});

describe('RoleCache while the game cannot be reached: a list against a binding', () => {
  const down = () => Promise.reject(new Error('the game could not be reached'));

  it('a list asked for before a binding, answered after it (a slow GM), does not make its role 404: the fetch error stands', async () => {
    const clock = new ManualClock(1_000_000);
    const cache = new RoleCache({ clock, ttlMs: 300_000, staleTtlMs: 3_600_000 });
    let answer: (roles: Role[]) => void = () => {};
    const slow = new Promise<Role[]>((resolve) => (answer = resolve));
    const first = cache.get('g', 'c', 'r1', () => slow, 0);
    clock.advance(50);
    const boundAt = clock.now(); // r2 is created and bound while the list is on its way
    clock.advance(6_000);
    answer([role('r1', 'one')]);
    await first;
    clock.advance(301_000); // past the TTL: the next query asks the game, which is down
    await expect(cache.get('g', 'c', 'r2', down, boundAt)).rejects.toThrow('the game could not be reached');
  });

  it('a list asked for well after the binding that leaves the role out is role_not_found; within the clock margin it is not', async () => {
    const clock = new ManualClock(1_000_000);
    const cache = new RoleCache({ clock, ttlMs: 300_000, staleTtlMs: 3_600_000 });
    const boundAt = clock.now();
    clock.advance(4_000); // another instance's clock may be this far ahead: not taken as newer
    await cache.get('g', 'c', 'r1', async () => [role('r1', 'one')], 0);
    clock.advance(301_000);
    await expect(cache.get('g', 'c', 'r2', down, boundAt)).rejects.toThrow('the game could not be reached');
    clock.advance(1_000);
    await cache.get('g', 'c', 'r1', async () => [role('r1', 'one')], 0); // asked 306 s after the binding
    clock.advance(301_000);
    await expect(cache.get('g', 'c', 'r2', down, boundAt)).rejects.toMatchObject({ code: 'role_not_found' });
  });
});
