import { describe, expect, it } from 'vitest';
import { RoleCache } from '../../src/bindings/role-cache.js';
import type { Role } from '../../src/bindings/schemas.js';
import { ManualClock } from '../../src/lib/clock.js';

// The cache's bounds (players and roles) at their edges, and its eviction order. The service
// builds its RoleCache with the default bounds (100,000 players, 500,000 roles), which no HTTP
// test can reach: the class is tested alone here, with small bounds.

const role = (role_id: string): Role => ({ server_id: 1, server_name: 's1', role_id, role_name: `name-${role_id}`, role_level: 1, avatar_url: '', create_time: 0 });
const roles = (n: number) => Array.from({ length: n }, (_, i) => role(`r${i}`));

function newCache(bounds: { maxEntries?: number; maxRoles?: number }) {
  return new RoleCache({ clock: new ManualClock(1_000), ttlMs: 300_000, staleTtlMs: 3_600_000, ...bounds });
}

/** Whether the player's role r0 is served from the cache (no fetch made). */
async function cached(cache: RoleCache, combo: string): Promise<boolean> {
  let fetched = false;
  await cache.get('g', combo, 'r0', async () => {
    fetched = true;
    return roles(1);
  });
  return !fetched;
}

describe('RoleCache bounds', () => {
  it('holds maxEntries players, and drops the oldest for one more', async () => {
    const cache = newCache({ maxEntries: 2 });
    await cache.get('g', 'a', 'r0', async () => roles(1));
    await cache.get('g', 'b', 'r0', async () => roles(1));
    // Exactly at the bound: both kept.
    expect(cache.heldRoles()).toBe(2);
    expect(await cached(cache, 'b')).toBe(true);
    expect(await cached(cache, 'a')).toBe(true);
    await cache.get('g', 'c', 'r0', async () => roles(1));
    expect(cache.heldRoles()).toBe(2);
    expect(await cached(cache, 'c')).toBe(true);
    expect(await cached(cache, 'b')).toBe(true);
    expect(await cached(cache, 'a')).toBe(false); // the oldest went (and is now fetched back)
  });

  it('holds exactly maxRoles roles without dropping anyone', async () => {
    const cache = newCache({ maxRoles: 10 });
    await cache.get('g', 'a', 'r0', async () => roles(4));
    await cache.get('g', 'b', 'r0', async () => roles(6));
    expect(cache.heldRoles()).toBe(10);
    expect(await cached(cache, 'a')).toBe(true);
    expect(await cached(cache, 'b')).toBe(true);
    // One answer of exactly maxRoles roles is kept (the others make room for it).
    const alone = newCache({ maxRoles: 10 });
    await alone.get('g', 'x', 'r0', async () => roles(10));
    expect(alone.heldRoles()).toBe(10);
    expect(await cached(alone, 'x')).toBe(true);
  });

  it('a player fetched again becomes the newest: the least recently fetched goes first', async () => {
    const cache = newCache({ maxEntries: 2 });
    await cache.get('g', 'a', 'r0', async () => roles(1));
    await cache.get('g', 'b', 'r0', async () => roles(1));
    // r1 is not in a's cached list: a is fetched again, after b.
    await cache.get('g', 'a', 'r1', async () => roles(2));
    expect(cache.heldRoles()).toBe(3);
    await cache.get('g', 'c', 'r0', async () => roles(1));
    // b, fetched least recently, went; a stays.
    expect(cache.heldRoles()).toBe(3);
    expect(await cached(cache, 'a')).toBe(true);
    expect(await cached(cache, 'c')).toBe(true);
    expect(await cached(cache, 'b')).toBe(false);
  });

  it('the same by the role bound: a player fetched again is kept over an older one', async () => {
    const cache = newCache({ maxRoles: 4 });
    await cache.get('g', 'a', 'r0', async () => roles(1));
    await cache.get('g', 'b', 'r0', async () => roles(1));
    await cache.get('g', 'a', 'r1', async () => roles(2)); // a again: 3 roles held
    await cache.get('g', 'c', 'r0', async () => roles(2)); // 5 > 4: the oldest (b) goes
    expect(cache.heldRoles()).toBe(4);
    expect(await cached(cache, 'a')).toBe(true);
    expect(await cached(cache, 'c')).toBe(true);
    expect(cache.heldRoles()).toBe(4);
  });
});
