import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, GamesTable, ProductsTable } from '../db/schema.js';
import { DatabaseStore } from '../db/database-store.js';

export type GameRow = Selectable<GamesTable>;
export type ProductRow = Selectable<ProductsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for games, their signing keys and products. */
export class GameStore extends DatabaseStore {
  findGame(q: Q, gameId: string): Promise<GameRow | undefined> {
    return q.selectFrom('games').selectAll().where('game_id', '=', gameId).executeTakeFirst();
  }

  async insertGame(q: Q, row: GameRow): Promise<void> {
    await q.insertInto('games').values(row).execute();
  }

  /**
   * Sets updated_at and so takes the game's row lock until the transaction ends: key changes of
   * one game serialise (no third key, no deleting both keys at once). False for an unknown game.
   */
  async lockGame(q: Q, gameId: string, now: number): Promise<boolean> {
    const r = await q.updateTable('games').set({ updated_at: now }).where('game_id', '=', gameId).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async updateGame(q: Q, gameId: string, patch: Partial<GameRow>): Promise<void> {
    await q.updateTable('games').set(patch).where('game_id', '=', gameId).execute();
  }

  /** The key the game last signed a request with (no updated_at: not an operator's change). */
  async setLastUsedKey(q: Q, gameId: string, keyId: string): Promise<void> {
    await q.updateTable('games').set({ last_used_key_id: keyId }).where('game_id', '=', gameId).execute();
  }

  /** Games in id order, after `afterId` (keyset paging). */
  listGames(q: Q, afterId: string | null, limit: number): Promise<GameRow[]> {
    let query = q.selectFrom('games').selectAll().orderBy('game_id').limit(limit);
    if (afterId !== null) query = query.where('game_id', '>', afterId);
    return query.execute();
  }

  /** The key ids of each game, newest first (as listKeys). */
  async keyIdsOf(q: Q, gameIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(gameIds.map((id) => [id, []]));
    if (!gameIds.length) return out;
    const rows = await q
      .selectFrom('game_keys')
      .select(['game_id', 'key_id'])
      .where('game_id', 'in', gameIds)
      .orderBy('created_at', 'desc')
      .orderBy('key_id', 'desc')
      .execute();
    for (const r of rows) out.get(r.game_id)?.push(r.key_id);
    return out;
  }

  listKeys(q: Q, gameId: string): Promise<{ key_id: string; secret_enc: string; created_at: number }[]> {
    return q
      .selectFrom('game_keys')
      .select(['key_id', 'secret_enc', 'created_at'])
      .where('game_id', '=', gameId)
      .orderBy('created_at', 'desc')
      .orderBy('key_id', 'desc')
      .execute();
  }

  async insertKey(q: Q, row: { key_id: string; game_id: string; secret_enc: string; created_at: number }): Promise<void> {
    await q.insertInto('game_keys').values(row).execute();
  }

  async deleteKey(q: Q, gameId: string, keyId: string): Promise<boolean> {
    const r = await q.deleteFrom('game_keys').where('game_id', '=', gameId).where('key_id', '=', keyId).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  findProduct(q: Q, gameId: string, productId: string): Promise<ProductRow | undefined> {
    return q.selectFrom('products').selectAll().where('game_id', '=', gameId).where('product_id', '=', productId).executeTakeFirst();
  }

  listProducts(q: Q, gameId: string): Promise<ProductRow[]> {
    return q.selectFrom('products').selectAll().where('game_id', '=', gameId).orderBy('product_id').execute();
  }

  async upsertProduct(q: Q, row: ProductRow): Promise<void> {
    await q
      .insertInto('products')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['game_id', 'product_id']).doUpdateSet({
          name: row.name,
          price: row.price,
          currency: row.currency,
          active: row.active,
          store_product_ids: row.store_product_ids,
          updated_at: row.updated_at,
        }),
      )
      .execute();
  }
}
