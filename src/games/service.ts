import type { Transaction } from 'kysely';
import type { DB } from '../db/schema.js';
import { Errors } from '../errors.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import { SnapshotCache } from '../lib/snapshot-cache.js';
import type { MaybePromise } from '../lib/maybe-promise.js';
import { recordAudit, type Actor } from '../admin/audit.js';
import { withoutPassword } from '../lib/url-display.js';
import type { Clock } from '../lib/clock.js';
import { prefixedId, randomBase62, type IdGenerator } from '../lib/ids.js';
import { refuseInternalUrl } from '../lib/outbound.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { RateLimitedCaller } from '../ratelimit/limiter.js';
import type { CreateGameBody, Game, ListGamesQuery, PatchGameBody, Product, PutProductBody, StoreProductIds } from './schemas.js';
import type { GameRow, GameStore, ProductRow } from './store.js';

/** At most this many signing keys are active per game (old + new during rotation). */
export const MAX_ACTIVE_KEYS = 2;

export function generateSecretKey(): string {
  return `sk_${randomBase62(43)}`;
}

/** A game as the hot paths need it: settings, decrypted keys, products. Cached. */
export interface GameSnapshot extends RateLimitedCaller {
  game: GameRow;
  /**
   * The active keys, [0] the one that signs outgoing notifications and GM requests (operators.md
   * 2: the key the game last signed a request with, else its oldest), then the others newest first.
   */
  secrets: string[];
  /** The key ids of `secrets`, in the same order. */
  keyIds: string[];
  products: Map<string, ProductRow>;
  nppaSecret: string | null;
}

/**
 * The games API's `sandbox_payments`: a view of the game's `sandbox` payment channel, which
 * the payments domain owns (payments/channel-service.ts).
 */
export interface SandboxChannel {
  sandboxEnabled(q: GameStore['db'], gameIds: string[]): Promise<Set<string>>;
  setSandbox(trx: Transaction<DB>, gameId: string, enabled: boolean, now: number): Promise<void>;
  invalidate(gameId: string): void;
}

export interface GameServiceDeps {
  store: GameStore;
  sandbox: SandboxChannel;
  clock: Clock;
  ids: IdGenerator;
  secrets: SecretBox;
  /** How long a snapshot may be served from memory (other instances see changes this late). */
  cacheTtlMs?: number;
  /** Refuse a gm_url on a literal internal address (production without ALLOW_PRIVATE_NOTIFY_URLS). */
  refuseInternalUrls?: boolean;
  /** Storing the key a game switched to failed (the next request with it tries again). */
  onKeyUseError?: (err: unknown, gameId: string) => void;
}

/** A GM error is recorded again, unchanged, at most this often per game and instance. */
const GM_ERROR_RECORD_INTERVAL_MS = 10_000;
/** The longest GM error kept (the rest is cut). */
const GM_ERROR_MAX_LENGTH = 500;

/** Operator management of games, keys and products, and the cached view for request paths. */
export class GameService {
  private readonly cache: SnapshotCache<GameSnapshot>;
  /** The GM error last recorded per game by this instance (see recordGmError). */
  private readonly gmErrors = new Map<string, { message: string; at: number }>();

  constructor(private readonly d: GameServiceDeps) {
    this.cache = new SnapshotCache(d.clock, d.cacheTtlMs ?? 5000, (gameId) => this.loadSnapshot(gameId));
  }

  /** Cached snapshot for signature checks and order creation; null for an unknown game. */
  snapshot(gameId: string): Promise<GameSnapshot | null> {
    return this.cache.getAsync(gameId);
  }

  /** The same, as a plain value when it is in memory (the signature check of every request). */
  lookup(gameId: string): MaybePromise<GameSnapshot | null> {
    return this.cache.get(gameId);
  }

  /** The snapshot as stored now (read again, and kept for the next lookups). */
  stored(gameId: string): Promise<GameSnapshot | null> {
    this.invalidate(gameId);
    return this.snapshot(gameId);
  }

  invalidate(gameId: string): void {
    this.cache.invalidate(gameId);
  }

  /**
   * A verified request of the game was signed with `snap.secrets[index]`. Index 0 is the key
   * that already signs outgoing requests: nothing to do, the case of nearly every request. Any
   * other key becomes the signing key here at once, and is stored (one write per change, not per
   * request) so that other instances sign with it from their next snapshot load.
   */
  keyUsed = (snap: GameSnapshot, index: number): Promise<void> | undefined => {
    if (index === 0) return undefined;
    const keyId = snap.keyIds[index];
    if (keyId === undefined) return undefined;
    moveToFront(snap.secrets, index);
    moveToFront(snap.keyIds, index);
    snap.game.last_used_key_id = keyId;
    const { store } = this.d;
    const gameId = snap.game.game_id;
    return store.transaction((trx) => store.setLastUsedKey(trx, gameId, keyId)).catch((err: unknown) => {
      // Loaded again from the database on the next request, which stores its key again.
      this.invalidate(gameId);
      this.d.onKeyUseError?.(err, gameId);
    });
  };

  private async loadSnapshot(gameId: string): Promise<GameSnapshot | null> {
    const { store, secrets } = this.d;
    const game = await store.findGame(store.db, gameId);
    if (!game) return null;
    const [stored, products] = await Promise.all([store.listKeys(store.db, gameId), store.listProducts(store.db, gameId)]);
    const keys = signingFirst(stored, game.last_used_key_id);
    return {
      game,
      secrets: keys.map((k) => secrets.open(k.secret_enc)),
      keyIds: keys.map((k) => k.key_id),
      products: new Map(products.map((p) => [p.product_id, p])),
      nppaSecret: game.nppa_secret_enc ? secrets.open(game.nppa_secret_enc) : null,
      rateLimit: { key: `game:${gameId}`, perSecond: game.rate_limit_per_second },
    };
  }

  /**
   * Keeps a game's last failed GM request for the operator (Game.gm_last_error). A game that
   * keeps failing the same way is written at most once per GM_ERROR_RECORD_INTERVAL_MS, so a
   * burst of partner queries costs few writes; the time shown is at most that much older.
   */
  async recordGmError(gameId: string, message: string): Promise<void> {
    const { store, clock } = this.d;
    const now = clock.now();
    const text = message.slice(0, GM_ERROR_MAX_LENGTH);
    const last = this.gmErrors.get(gameId);
    if (last && last.message === text && now - last.at < GM_ERROR_RECORD_INTERVAL_MS) return;
    this.gmErrors.set(gameId, { message: text, at: now });
    await store.transaction((trx) => store.updateGame(trx, gameId, { gm_last_error: text, gm_last_error_at: now }));
  }

  private checkGmUrl(url: string | null | undefined): void {
    if (!url) return;
    if (this.d.refuseInternalUrls) refuseInternalUrl('gm_url', url);
    // GM requests are signed (PROTOCOL 8) and never carry URL credentials: a password here would
    // be stored and shown for nothing.
    const u = new URL(url);
    if (u.username || u.password) throw Errors.invalidRequest('gm_url must not carry a user name or password: GM requests are signed, never sent with URL credentials');
  }

  async create(body: CreateGameBody, by: Actor): Promise<Game & { key_id: string; secret_key: string }> {
    const { store, clock, ids, secrets } = this.d;
    this.checkGmUrl(body.gm_url);
    const now = clock.now();
    const secret = body.secret_key ?? generateSecretKey();
    const keyId = prefixedId('key', ids);
    const row: GameRow = {
      game_id: body.game_id,
      name: body.name,
      iap_enabled: body.iap_enabled === false ? 0 : 1,
      // Not read: the sandbox channel (game_channels) holds the setting.
      sandbox_payments: 0,
      order_ttl_seconds: body.order_ttl_seconds ?? 1800,
      gm_url: body.gm_url ?? null,
      rate_limit_per_second: body.rate_limit_per_second ?? 1000,
      nppa_app_id: null,
      nppa_biz_id: null,
      nppa_secret_enc: null,
      last_used_key_id: null,
      created_at: now,
      updated_at: now,
      gm_last_error: null,
      gm_last_error_at: null,
    };
    await store.transaction(async (trx) => {
      if (await store.findGame(trx, body.game_id)) throw Errors.conflict(`game ${body.game_id} already exists`);
      await store.insertGame(trx, row);
      await store.insertKey(trx, { key_id: keyId, game_id: row.game_id, secret_enc: secrets.seal(secret), created_at: now });
      // A new game has no payment channel unless asked for (payments.md 1).
      if (body.sandbox_payments === true) await this.d.sandbox.setSandbox(trx, row.game_id, true, now);
      await recordAudit(trx, ids, now, { by, game: row.game_id, action: 'game.create', target: row.game_id, detail: { ...body, secret_key: undefined } });
    }).catch(rethrowConflict(`game ${body.game_id} already exists`));
    this.invalidate(row.game_id);
    this.d.sandbox.invalidate(row.game_id);
    return { ...toGame(row, [keyId], body.sandbox_payments === true), key_id: keyId, secret_key: secret };
  }

  /** One page of games in id order; `next_cursor` is null on the last page. */
  async list(query: ListGamesQuery): Promise<{ data: Game[]; next_cursor: string | null }> {
    const { store } = this.d;
    const limit = query.limit ?? 50;
    // Tagged with its listing: another listing's cursor (also an id) is a 400, not a page.
    const tagged = (v: unknown) => Array.isArray(v) && v.length === 2 && v[0] === 'game' && typeof v[1] === 'string';
    const after = query.cursor === undefined ? null : decodeCursor<[string, string]>(query.cursor, tagged)[1];
    const rows = await store.listGames(store.db, after, limit + 1);
    const page = rows.slice(0, limit);
    const gameIds = page.map((r) => r.game_id);
    const [keys, sandbox] = await Promise.all([store.keyIdsOf(store.db, gameIds), this.d.sandbox.sandboxEnabled(store.db, gameIds)]);
    const last = page[page.length - 1];
    return { data: page.map((r) => toGame(r, keys.get(r.game_id) ?? [], sandbox.has(r.game_id))), next_cursor: rows.length > limit && last ? encodeCursor(['game', last.game_id]) : null };
  }

  async get(gameId: string): Promise<Game> {
    const { store } = this.d;
    const row = await store.findGame(store.db, gameId);
    if (!row) throw Errors.notFound(`game ${gameId} not found`);
    const [keys, sandbox] = await Promise.all([store.listKeys(store.db, gameId), this.d.sandbox.sandboxEnabled(store.db, [gameId])]);
    return toGame(row, keys.map((k) => k.key_id), sandbox.has(gameId));
  }

  async patch(gameId: string, body: PatchGameBody, by: Actor): Promise<Game> {
    const { store, clock, ids, secrets } = this.d;
    // Nothing to change: not a change (no updated_at bump, no audit entry).
    if (Object.keys(body).length === 0) return this.get(gameId);
    this.checkGmUrl(body.gm_url);
    const now = clock.now();
    const patch: Partial<GameRow> = { updated_at: now };
    if (body.name !== undefined) patch.name = body.name;
    if (body.iap_enabled !== undefined) patch.iap_enabled = body.iap_enabled ? 1 : 0;
    if (body.order_ttl_seconds !== undefined) patch.order_ttl_seconds = body.order_ttl_seconds;
    if (body.gm_url !== undefined) patch.gm_url = body.gm_url;
    if (body.rate_limit_per_second !== undefined) patch.rate_limit_per_second = body.rate_limit_per_second;
    if (body.nppa !== undefined) {
      patch.nppa_app_id = body.nppa?.app_id ?? null;
      patch.nppa_biz_id = body.nppa?.biz_id ?? null;
      // As issued: the key's characters are signed as they are (nppa.md, Signature).
      patch.nppa_secret_enc = body.nppa ? secrets.seal(body.nppa.secret_key) : null;
    }
    await store.transaction(async (trx) => {
      if (!(await store.lockGame(trx, gameId, now))) throw Errors.notFound(`game ${gameId} not found`);
      await store.updateGame(trx, gameId, patch);
      if (body.sandbox_payments !== undefined) await this.d.sandbox.setSandbox(trx, gameId, body.sandbox_payments, now);
      const detail = { ...body, nppa: body.nppa ? { ...body.nppa, secret_key: '***' } : body.nppa };
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'game.update', target: gameId, detail });
    });
    this.invalidate(gameId);
    this.d.sandbox.invalidate(gameId);
    return this.get(gameId);
  }

  async addKey(gameId: string, by: Actor): Promise<{ key_id: string; secret_key: string }> {
    const { store, clock, ids, secrets } = this.d;
    const now = clock.now();
    const secret = generateSecretKey();
    const keyId = prefixedId('key', ids);
    await store.transaction(async (trx) => {
      if (!(await store.lockGame(trx, gameId, now))) throw Errors.notFound(`game ${gameId} not found`);
      const keys = await store.listKeys(trx, gameId);
      if (keys.length >= MAX_ACTIVE_KEYS) {
        throw Errors.conflict(`game ${gameId} already has ${MAX_ACTIVE_KEYS} active keys; delete the old one first`);
      }
      await store.insertKey(trx, { key_id: keyId, game_id: gameId, secret_enc: secrets.seal(secret), created_at: now });
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'game.key.create', target: `${gameId}/${keyId}` });
    });
    this.invalidate(gameId);
    return { key_id: keyId, secret_key: secret };
  }

  async deleteKey(gameId: string, keyId: string, by: Actor): Promise<void> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    await store.transaction(async (trx) => {
      if (!(await store.lockGame(trx, gameId, now))) throw Errors.notFound(`game ${gameId} not found`);
      const keys = await store.listKeys(trx, gameId);
      if (!keys.some((k) => k.key_id === keyId)) throw Errors.notFound(`key ${keyId} of game ${gameId} not found`);
      if (keys.length === 1) throw Errors.conflict('a game must keep one active key; create the new key first');
      await store.deleteKey(trx, gameId, keyId);
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'game.key.delete', target: `${gameId}/${keyId}` });
    });
    this.invalidate(gameId);
  }

  async putProduct(gameId: string, productId: string, body: PutProductBody, by: Actor): Promise<Product> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    let row: ProductRow | undefined;
    await store.transaction(async (trx) => {
      if (!(await store.findGame(trx, gameId))) throw Errors.notFound(`game ${gameId} not found`);
      const existing = await store.findProduct(trx, gameId, productId);
      row = {
        game_id: gameId,
        product_id: productId,
        name: body.name,
        price: body.price,
        currency: body.currency,
        active: body.active === false ? 0 : 1,
        store_product_ids: body.store_product_ids && Object.keys(body.store_product_ids).length ? JSON.stringify(body.store_product_ids) : null,
        created_at: existing?.created_at ?? now,
        updated_at: now,
      };
      await store.upsertProduct(trx, row);
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'product.put', target: `${gameId}/${productId}`, detail: body });
    });
    this.invalidate(gameId);
    return toProduct(row as ProductRow);
  }

  async getProduct(gameId: string, productId: string): Promise<Product> {
    const { store } = this.d;
    const row = await store.findProduct(store.db, gameId, productId);
    if (!row) throw Errors.notFound(`product ${productId} of game ${gameId} not found`);
    return toProduct(row);
  }

  async listProducts(gameId: string): Promise<Product[]> {
    const { store } = this.d;
    if (!(await store.findGame(store.db, gameId))) throw Errors.notFound(`game ${gameId} not found`);
    return (await store.listProducts(store.db, gameId)).map(toProduct);
  }
}

/**
 * The key that signs what the service sends the game (operators.md 2): the one it last signed a
 * request with while that key is active, else its oldest. `keyIds` is newest first.
 */
export function signingKeyId(keyIds: readonly string[], lastUsed: string | null): string | null {
  if (lastUsed !== null && keyIds.includes(lastUsed)) return lastUsed;
  return keyIds[keyIds.length - 1] ?? null;
}

/** The keys (newest first) with the signing key moved to the front. */
function signingFirst<K extends { key_id: string }>(keys: K[], lastUsed: string | null): K[] {
  const id = signingKeyId(keys.map((k) => k.key_id), lastUsed);
  const at = keys.findIndex((k) => k.key_id === id);
  if (at > 0) moveToFront(keys, at);
  return keys;
}

function moveToFront<T>(items: T[], index: number): void {
  const [item] = items.splice(index, 1);
  items.unshift(item as T);
}

export function toGame(row: GameRow, keyIds: string[], sandbox: boolean): Game {
  return {
    game_id: row.game_id,
    name: row.name,
    iap_enabled: row.iap_enabled === 1,
    sandbox_payments: sandbox,
    order_ttl_seconds: row.order_ttl_seconds,
    // One stored before such URLs were refused: its password is not shown.
    gm_url: row.gm_url === null ? null : withoutPassword(row.gm_url),
    rate_limit_per_second: row.rate_limit_per_second,
    nppa: row.nppa_app_id && row.nppa_biz_id ? { app_id: row.nppa_app_id, biz_id: row.nppa_biz_id } : null,
    key_ids: keyIds,
    signing_key_id: signingKeyId(keyIds, row.last_used_key_id),
    created_at: row.created_at,
    updated_at: row.updated_at,
    gm_last_error: row.gm_last_error,
    gm_last_error_at: row.gm_last_error_at,
  };
}

export function toProduct(row: ProductRow): Product {
  return {
    game_id: row.game_id,
    product_id: row.product_id,
    name: row.name,
    price: row.price,
    currency: row.currency,
    active: row.active === 1,
    store_product_ids: row.store_product_ids ? (JSON.parse(row.store_product_ids) as StoreProductIds) : {},
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** Maps a unique-constraint violation (a concurrent create) to 409. */
export function rethrowConflict(message: string) {
  return (e: unknown): never => {
    const msg = String((e as Error)?.message ?? '');
    const code = (e as { code?: string })?.code;
    if (code === '23505' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint/.test(msg)) {
      throw Errors.conflict(message);
    }
    throw e;
  };
}
