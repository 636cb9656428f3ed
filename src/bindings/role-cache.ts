import { Errors } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import type { Role } from './schemas.js';

export interface RoleCacheOptions {
  clock: Clock;
  /** A cached role is served without asking the game for this long. */
  ttlMs: number;
  /** When the game cannot be reached, a cached role up to this old is served instead. */
  staleTtlMs: number;
  maxEntries?: number;
}

export interface CachedRole {
  role: Role;
  /** True when the game could not be reached and an older copy was served. */
  stale: boolean;
}

/**
 * One string per (game, combo_id, role_id), unambiguous whatever the ids hold: the first two
 * carry their lengths. Half the cost of JSON.stringify of the three (a micro-benchmark), and one
 * flat string, which the Map hashes without flattening it first.
 */
function roleKey(gameId: string, comboId: string, roleId: string): string {
  return [gameId.length, gameId, comboId.length, comboId, roleId].join(':');
}

/**
 * Role data from the game's GM endpoint, cached per (game, combo_id, role_id) (PROTOCOL 7).
 * Concurrent queries for the same player share one GM call (single flight). Only found roles
 * are cached: a role the game does not list is asked again next time, so a role created after
 * the last call is never hidden.
 */
export class RoleCache {
  private readonly entries = new Map<string, { role: Role; at: number }>();
  private readonly flights = new Map<string, { result: Promise<Role[]>; waiters: number }>();
  private readonly maxEntries: number;

  constructor(private readonly o: RoleCacheOptions) {
    this.maxEntries = o.maxEntries ?? 100_000;
  }

  /**
   * The role, fresh from cache or from `fetch` (the player's role list). Throws role_not_found
   * when the game answered without it, and fetch's error when the game cannot be reached and no
   * copy young enough to serve stale is cached.
   */
  async get(gameId: string, comboId: string, roleId: string, fetch: () => Promise<Role[]>): Promise<CachedRole> {
    const key = roleKey(gameId, comboId, roleId);
    const hit = this.entries.get(key);
    if (hit && this.o.clock.now() - hit.at < this.o.ttlMs) return { role: hit.role, stale: false };
    let roles: Role[];
    try {
      roles = await this.fetchShared(gameId, comboId, fetch);
    } catch (e) {
      if (hit && this.o.clock.now() - hit.at <= this.o.staleTtlMs) return { role: hit.role, stale: true };
      throw e;
    }
    const role = roles.find((r) => r.role_id === roleId);
    if (!role) {
      this.entries.delete(key);
      throw Errors.roleNotFound(`role ${roleId} no longer exists in the game`);
    }
    return { role, stale: false };
  }

  /** How many queries wait on a GM call right now (observability, tests). */
  waiting(): number {
    let n = 0;
    for (const f of this.flights.values()) n += f.waiters;
    return n;
  }

  private async fetchShared(gameId: string, comboId: string, fetch: () => Promise<Role[]>): Promise<Role[]> {
    const key = roleKey(gameId, comboId, '');
    let flight = this.flights.get(key);
    if (!flight) {
      const result = fetch().then((roles) => {
        this.store(gameId, comboId, roles);
        return roles;
      });
      const created = { result, waiters: 0 };
      flight = created;
      this.flights.set(key, created);
      // Settled either way: the next query after this one asks the game again.
      const done = () => {
        if (this.flights.get(key) === created) this.flights.delete(key);
      };
      result.then(done, done);
    }
    flight.waiters++;
    try {
      return await flight.result;
    } finally {
      flight.waiters--;
    }
  }

  private store(gameId: string, comboId: string, roles: Role[]): void {
    const at = this.o.clock.now();
    for (const role of roles) {
      const key = roleKey(gameId, comboId, role.role_id);
      // Re-insert so Map order is oldest-first: eviction drops the least recently fetched.
      this.entries.delete(key);
      this.entries.set(key, { role, at });
    }
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }
}
