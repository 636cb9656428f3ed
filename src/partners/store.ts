import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, PartnersTable } from '../db/schema.js';
import { DatabaseStore } from '../db/database-store.js';

export type PartnerRow = Selectable<PartnersTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for partners, their signing keys and the games they are granted. */
export class PartnerStore extends DatabaseStore {
  findPartner(q: Q, partnerId: string): Promise<PartnerRow | undefined> {
    return q.selectFrom('partners').selectAll().where('partner_id', '=', partnerId).executeTakeFirst();
  }

  /** Partners in id order, after `afterId` (keyset paging). */
  listPartners(q: Q, afterId: string | null, limit: number): Promise<PartnerRow[]> {
    let query = q.selectFrom('partners').selectAll().orderBy('partner_id').limit(limit);
    if (afterId !== null) query = query.where('partner_id', '>', afterId);
    return query.execute();
  }

  async insertPartner(q: Q, row: PartnerRow): Promise<void> {
    await q.insertInto('partners').values(row).execute();
  }

  /**
   * Sets updated_at and so takes the partner's row lock until the transaction ends: key and
   * grant changes of one partner serialise (no third key, no deleting both keys at once).
   * False when the partner does not exist.
   */
  async lockPartner(q: Q, partnerId: string, now: number): Promise<boolean> {
    const r = await q.updateTable('partners').set({ updated_at: now }).where('partner_id', '=', partnerId).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async updatePartner(q: Q, partnerId: string, patch: Partial<PartnerRow>): Promise<void> {
    await q.updateTable('partners').set(patch).where('partner_id', '=', partnerId).execute();
  }

  listKeys(q: Q, partnerId: string): Promise<{ key_id: string; secret_enc: string; created_at: number }[]> {
    return q
      .selectFrom('partner_keys')
      .select(['key_id', 'secret_enc', 'created_at'])
      .where('partner_id', '=', partnerId)
      .orderBy('created_at', 'desc')
      .orderBy('key_id', 'desc')
      .execute();
  }

  /** Key ids of many partners at once (for list pages), newest first per partner. */
  async keyIdsOf(q: Q, partnerIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(partnerIds.map((id) => [id, []]));
    if (!partnerIds.length) return out;
    const rows = await q
      .selectFrom('partner_keys')
      .select(['partner_id', 'key_id'])
      .where('partner_id', 'in', partnerIds)
      .orderBy('created_at', 'desc')
      .orderBy('key_id', 'desc')
      .execute();
    for (const r of rows) out.get(r.partner_id)?.push(r.key_id);
    return out;
  }

  async insertKey(q: Q, row: { key_id: string; partner_id: string; secret_enc: string; created_at: number }): Promise<void> {
    await q.insertInto('partner_keys').values(row).execute();
  }

  async deleteKey(q: Q, partnerId: string, keyId: string): Promise<void> {
    await q.deleteFrom('partner_keys').where('partner_id', '=', partnerId).where('key_id', '=', keyId).execute();
  }

  async gamesOf(q: Q, partnerIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(partnerIds.map((id) => [id, []]));
    if (!partnerIds.length) return out;
    const rows = await q
      .selectFrom('partner_games')
      .select(['partner_id', 'game_id'])
      .where('partner_id', 'in', partnerIds)
      .orderBy('game_id')
      .execute();
    for (const r of rows) out.get(r.partner_id)?.push(r.game_id);
    return out;
  }

  /** Replaces the partner's granted games with `gameIds`. */
  async setGames(q: Q, partnerId: string, gameIds: string[]): Promise<void> {
    await q.deleteFrom('partner_games').where('partner_id', '=', partnerId).execute();
    if (gameIds.length) await q.insertInto('partner_games').values(gameIds.map((game_id) => ({ partner_id: partnerId, game_id }))).execute();
  }

  /** The subset of `gameIds` that exist. */
  async existingGames(q: Q, gameIds: string[]): Promise<Set<string>> {
    if (!gameIds.length) return new Set();
    const rows = await q.selectFrom('games').select('game_id').where('game_id', 'in', gameIds).execute();
    return new Set(rows.map((r) => r.game_id));
  }
}
