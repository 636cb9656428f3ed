import type { Clock } from './clock.js';
import type { MaybePromise } from './maybe-promise.js';

interface Entry<T> {
  at: number;
  promise: Promise<T | null>;
  /** Set once the load has succeeded: a hit then needs no promise. */
  loaded: boolean;
  value: T | null;
}

/**
 * Loaded snapshots (a game's or a partner's settings and keys) kept for `ttlMs`: concurrent
 * misses share one load, and a failed load is forgotten so the next request retries it. A hit
 * whose load has finished is returned as a plain value: the signature check of every request
 * reads one, and an `await` there costs a promise and a microtask per request.
 */
export class SnapshotCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  /**
   * Ids with no record, apart: anyone can send requests naming ids that do not exist, and
   * filling `entries` with them would clear the real snapshots with them at the cap.
   */
  private readonly misses = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
    private readonly load: (id: string) => Promise<T | null>,
    private readonly maxEntries = 100_000,
    private readonly maxMisses = 10_000,
  ) {}

  /** The snapshot of `id` (null: no such record), from memory when fresh. */
  get(id: string): MaybePromise<T | null> {
    const now = this.clock.now();
    const hit = this.entries.get(id);
    if (hit && now - hit.at < this.ttlMs) return hit.loaded ? hit.value : hit.promise;
    const missAt = this.misses.get(id);
    if (missAt !== undefined && now - missAt < this.ttlMs) return null;
    const entry: Entry<T> = { at: now, promise: this.load(id), loaded: false, value: null };
    this.entries.set(id, entry);
    entry.promise.then(
      (v) => {
        entry.value = v;
        entry.loaded = true;
        if (v === null && this.entries.get(id) === entry) this.remember(id, entry.at);
      },
      () => {
        if (this.entries.get(id) === entry) this.entries.delete(id);
      },
    );
    if (this.entries.size > this.maxEntries) this.entries.clear();
    return entry.promise;
  }

  private remember(id: string, at: number): void {
    this.entries.delete(id);
    if (this.misses.size >= this.maxMisses) this.misses.clear();
    this.misses.set(id, at);
  }

  /** The same, always as a promise. */
  async getAsync(id: string): Promise<T | null> {
    return this.get(id);
  }

  invalidate(id: string): void {
    this.entries.delete(id);
    this.misses.delete(id);
  }
}
