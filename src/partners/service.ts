import { recordAudit, type Actor } from '../admin/audit.js';
import { SnapshotCache } from '../lib/snapshot-cache.js';
import type { MaybePromise } from '../lib/maybe-promise.js';
import { Errors } from '../errors.js';
import { generateSecretKey, MAX_ACTIVE_KEYS, rethrowConflict } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { RateLimitedCaller } from '../ratelimit/limiter.js';
import type { CreatePartnerBody, ListPartnersQuery, Partner, PatchPartnerBody } from './schemas.js';
import type { PartnerRow, PartnerStore } from './store.js';

/** A partner as request paths need it: settings, granted games, decrypted keys. Cached. */
export interface PartnerSnapshot extends RateLimitedCaller {
  partner: PartnerRow;
  games: ReadonlySet<string>;
  /** Newest first (two during a key rotation). */
  secrets: string[];
}

export interface PartnerServiceDeps {
  store: PartnerStore;
  clock: Clock;
  ids: IdGenerator;
  secrets: SecretBox;
  /** How long a snapshot may be served from memory (other instances see changes this late). */
  cacheTtlMs?: number;
}

/** Operator management of partners (PROTOCOL 11) and the cached view for signed requests. */
export class PartnerService {
  private readonly cache: SnapshotCache<PartnerSnapshot>;

  constructor(private readonly d: PartnerServiceDeps) {
    this.cache = new SnapshotCache(d.clock, d.cacheTtlMs ?? 5000, (partnerId) => this.loadSnapshot(partnerId));
  }

  /** Cached snapshot for signature checks and grants; null for an unknown partner. */
  snapshot(partnerId: string): Promise<PartnerSnapshot | null> {
    return this.cache.getAsync(partnerId);
  }

  /** The same, as a plain value when it is in memory (the signature check of every request). */
  lookup(partnerId: string): MaybePromise<PartnerSnapshot | null> {
    return this.cache.get(partnerId);
  }

  invalidate(partnerId: string): void {
    this.cache.invalidate(partnerId);
  }

  private async loadSnapshot(partnerId: string): Promise<PartnerSnapshot | null> {
    const { store, secrets } = this.d;
    const partner = await store.findPartner(store.db, partnerId);
    if (!partner) return null;
    const [keys, games] = await Promise.all([store.listKeys(store.db, partnerId), store.gamesOf(store.db, [partnerId])]);
    return {
      partner,
      games: new Set(games.get(partnerId)),
      secrets: keys.map((k) => secrets.open(k.secret_enc)),
      rateLimit: { key: `partner:${partnerId}`, perSecond: partner.rate_limit_per_second },
    };
  }

  async create(body: CreatePartnerBody, by: Actor): Promise<Partner & { key_id: string; secret_key: string }> {
    const { store, clock, ids, secrets } = this.d;
    const now = clock.now();
    const secret = body.secret_key ?? generateSecretKey();
    const keyId = prefixedId('key', ids);
    const row: PartnerRow = {
      partner_id: body.partner_id,
      name: body.name,
      enabled: body.enabled === false ? 0 : 1,
      rate_limit_per_second: body.rate_limit_per_second ?? 100,
      created_at: now,
      updated_at: now,
    };
    await store
      .transaction(async (trx) => {
        if (await store.findPartner(trx, row.partner_id)) throw Errors.conflict(`partner ${row.partner_id} already exists`);
        await this.checkGamesExist(trx, body.games);
        await store.insertPartner(trx, row);
        await store.setGames(trx, row.partner_id, body.games);
        await store.insertKey(trx, { key_id: keyId, partner_id: row.partner_id, secret_enc: secrets.seal(secret), created_at: now });
        await recordAudit(trx, ids, now, { by, game: null, action: 'partner.create', target: row.partner_id, detail: { ...body, secret_key: undefined } });
      })
      .catch(rethrowConflict(`partner ${row.partner_id} already exists`));
    this.invalidate(row.partner_id);
    return { ...toPartner(row, [...body.games].sort(), [keyId]), key_id: keyId, secret_key: secret };
  }

  async get(partnerId: string): Promise<Partner> {
    const { store } = this.d;
    const row = await store.findPartner(store.db, partnerId);
    if (!row) throw Errors.notFound(`partner ${partnerId} not found`);
    const [games, keys] = await Promise.all([store.gamesOf(store.db, [partnerId]), store.keyIdsOf(store.db, [partnerId])]);
    return toPartner(row, games.get(partnerId) ?? [], keys.get(partnerId) ?? []);
  }

  /** One page of partners in id order; `next_cursor` is null on the last page. */
  async list(query: ListPartnersQuery): Promise<{ data: Partner[]; next_cursor: string | null }> {
    const { store } = this.d;
    const limit = query.limit ?? 50;
    // Tagged with its listing: another listing's cursor (also an id) is a 400, not a page.
    const tagged = (v: unknown) => Array.isArray(v) && v.length === 2 && v[0] === 'partner' && typeof v[1] === 'string';
    const after = query.cursor === undefined ? null : decodeCursor<[string, string]>(query.cursor, tagged)[1];
    const rows = await store.listPartners(store.db, after, limit + 1);
    const page = rows.slice(0, limit);
    const ids = page.map((r) => r.partner_id);
    const [games, keys] = await Promise.all([store.gamesOf(store.db, ids), store.keyIdsOf(store.db, ids)]);
    const data = page.map((r) => toPartner(r, games.get(r.partner_id) ?? [], keys.get(r.partner_id) ?? []));
    const last = page[page.length - 1];
    return { data, next_cursor: rows.length > limit && last ? encodeCursor(['partner', last.partner_id]) : null };
  }

  async patch(partnerId: string, body: PatchPartnerBody, by: Actor): Promise<Partner> {
    const { store, clock, ids } = this.d;
    // Nothing to change: not a change (no updated_at bump, no audit entry).
    if (Object.keys(body).length === 0) return this.get(partnerId);
    const now = clock.now();
    const patch: Partial<PartnerRow> = { updated_at: now };
    if (body.name !== undefined) patch.name = body.name;
    if (body.enabled !== undefined) patch.enabled = body.enabled ? 1 : 0;
    if (body.rate_limit_per_second !== undefined) patch.rate_limit_per_second = body.rate_limit_per_second;
    await store.transaction(async (trx) => {
      if (!(await store.lockPartner(trx, partnerId, now))) throw Errors.notFound(`partner ${partnerId} not found`);
      await store.updatePartner(trx, partnerId, patch);
      if (body.games) {
        await this.checkGamesExist(trx, body.games);
        await store.setGames(trx, partnerId, body.games);
      }
      await recordAudit(trx, ids, now, { by, game: null, action: 'partner.update', target: partnerId, detail: body });
    });
    this.invalidate(partnerId);
    return this.get(partnerId);
  }

  async addKey(partnerId: string, by: Actor): Promise<{ key_id: string; secret_key: string }> {
    const { store, clock, ids, secrets } = this.d;
    const now = clock.now();
    const secret = generateSecretKey();
    const keyId = prefixedId('key', ids);
    await store.transaction(async (trx) => {
      if (!(await store.lockPartner(trx, partnerId, now))) throw Errors.notFound(`partner ${partnerId} not found`);
      const keys = await store.listKeys(trx, partnerId);
      if (keys.length >= MAX_ACTIVE_KEYS) {
        throw Errors.conflict(`partner ${partnerId} already has ${MAX_ACTIVE_KEYS} active keys; delete the old one first`);
      }
      await store.insertKey(trx, { key_id: keyId, partner_id: partnerId, secret_enc: secrets.seal(secret), created_at: now });
      await recordAudit(trx, ids, now, { by, game: null, action: 'partner.key.create', target: `${partnerId}/${keyId}` });
    });
    this.invalidate(partnerId);
    return { key_id: keyId, secret_key: secret };
  }

  async deleteKey(partnerId: string, keyId: string, by: Actor): Promise<void> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    await store.transaction(async (trx) => {
      await store.lockPartner(trx, partnerId, now);
      const keys = await store.listKeys(trx, partnerId);
      if (!keys.some((k) => k.key_id === keyId)) throw Errors.notFound(`key ${keyId} of partner ${partnerId} not found`);
      if (keys.length === 1) throw Errors.conflict('a partner must keep one active key; create the new key first');
      await store.deleteKey(trx, partnerId, keyId);
      await recordAudit(trx, ids, now, { by, game: null, action: 'partner.key.delete', target: `${partnerId}/${keyId}` });
    });
    this.invalidate(partnerId);
  }

  private async checkGamesExist(trx: Parameters<PartnerStore['existingGames']>[0], gameIds: string[]): Promise<void> {
    const found = await this.d.store.existingGames(trx, gameIds);
    const missing = gameIds.filter((g) => !found.has(g));
    if (missing.length) throw Errors.invalidRequest(`games: unknown game ${missing.join(', ')}`);
  }
}

export function toPartner(row: PartnerRow, games: string[], keyIds: string[]): Partner {
  return {
    partner_id: row.partner_id,
    name: row.name,
    enabled: row.enabled === 1,
    games,
    rate_limit_per_second: row.rate_limit_per_second,
    key_ids: keyIds,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}
