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
  /** At most this many roles over all players (a GM may list thousands for one player). */
  maxRoles?: number;
}

export interface CachedRole {
  role: Role;
  /** True when the game could not be reached and an older copy was served. */
  stale: boolean;
}

/**
 * One string per (game, combo_id), unambiguous whatever the ids hold: the game id carries its
 * length. One flat string, which the Map hashes without flattening it first.
 */
function playerKey(gameId: string, comboId: string): string {
  return [gameId.length, gameId, comboId].join(':');
}

/**
 * A binding's time comes from the clock of the instance that made it: a list is taken as newer
 * than a binding only when it was asked for this much later (instances' clocks differ a little).
 */
const CLOCK_MARGIN_MS = 5_000;

/** A player's roles as the game last listed them (`at`: when they were asked for). */
interface Listing {
  roles: Map<string, Role>;
  at: number;
}

/**
 * Role data from the game's GM endpoint (PROTOCOL 7), cached per player (game, combo_id) as
 * the game's last answer, whole: an answer replaces the player's list, so a role the game no
 * longer lists is gone at once, and never served stale later (while the game cannot be reached,
 * its last answer up to `staleTtlMs` old stands: a role it listed is served, one it did not is
 * role_not_found if that answer came after the binding was made). Concurrent queries for the same player share one GM call (single flight).
 * A role missing from a fresh list is asked for again rather than refused from the cache, so a
 * role created after the last call is never hidden.
 */
export class RoleCache {
  private readonly entries = new Map<string, Listing>();
  private readonly flights = new Map<string, { result: Promise<Role[]>; waiters: number }>();
  private readonly maxEntries: number;
  private readonly maxRoles: number;
  /** Roles held over all entries. */
  private roleCount = 0;

  constructor(private readonly o: RoleCacheOptions) {
    this.maxEntries = o.maxEntries ?? 100_000;
    this.maxRoles = o.maxRoles ?? 500_000;
  }

  /**
   * The role, fresh from cache or from `fetch` (the player's role list). Throws role_not_found
   * when the game answered without it, and fetch's error when the game cannot be reached and no
   * copy young enough to serve stale is cached, or the cached list is older than the binding
   * (`boundAt`, Unix ms) and does not have the role.
   */
  async get(gameId: string, comboId: string, roleId: string, fetch: () => Promise<Role[]>, boundAt = 0): Promise<CachedRole> {
    const key = playerKey(gameId, comboId);
    const hit = this.entries.get(key);
    const cached = hit?.roles.get(roleId);
    if (hit && cached && this.o.clock.now() - hit.at < this.o.ttlMs) return { role: cached, stale: false };
    let roles: Role[];
    try {
      roles = await this.fetchShared(key, fetch);
    } catch (e) {
      // The game cannot be reached: its last answer, if young enough, stands in for it, for a
      // role it listed and for one it left out after the binding was made. An answer from
      // before the binding cannot tell: the role may have been created since (PROTOCOL 7:
      // unreachable, nothing to serve, 500).
      if (!hit || this.o.clock.now() - hit.at > this.o.staleTtlMs) throw e;
      if (!cached && hit.at <= boundAt + CLOCK_MARGIN_MS) throw e;
      if (!cached) throw Errors.roleNotFound(`role ${roleId} no longer exists in the game`);
      return { role: cached, stale: true };
    }
    const role = roles.find((r) => r.role_id === roleId);
    if (!role) throw Errors.roleNotFound(`role ${roleId} no longer exists in the game`);
    return { role, stale: false };
  }

  /** How many queries wait on a GM call right now (observability, tests). */
  waiting(): number {
    let n = 0;
    for (const f of this.flights.values()) n += f.waiters;
    return n;
  }

  private async fetchShared(key: string, fetch: () => Promise<Role[]>): Promise<Role[]> {
    let flight = this.flights.get(key);
    if (!flight) {
      // The list is as of when it was asked for: a role bound while the answer was on its way
      // may not be in it.
      const askedAt = this.o.clock.now();
      const result = fetch().then((roles) => {
        this.store(key, roles, askedAt);
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

  private store(key: string, roles: Role[], askedAt: number): void {
    // Re-insert so Map order is oldest-first: eviction drops the least recently fetched player.
    this.drop(key);
    // A role id listed twice: the first one, as a fresh answer's `find` serves it.
    const byId = new Map<string, Role>();
    for (const r of roles) if (!byId.has(r.role_id)) byId.set(r.role_id, r);
    this.entries.set(key, { roles: byId, at: askedAt });
    this.roleCount += byId.size;
    // Bounded by players and by roles: one GM's long lists cannot fill the process's memory
    // (an answer alone over maxRoles is not kept at all).
    while (this.entries.size > this.maxEntries || this.roleCount > this.maxRoles) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.roleCount -= old.roles.size;
    this.entries.delete(key);
  }

  /** Roles held over all players (tests). */
  heldRoles(): number {
    return this.roleCount;
  }
}
