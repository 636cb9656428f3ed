import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, GamesTable, ProductsTable } from '../db/schema.js';

export type GameRow = Selectable<GamesTable>;
export type ProductRow = Selectable<ProductsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for games, their signing keys and products. */
export class GameStore {
  constructor(readonly db: Kysely<DB>) {}

  transaction<T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
    return this.db.transaction().execute(fn);
  }

  findGame(q: Q, gameId: string): Promise<GameRow | undefined> {
    return q.selectFrom('games').selectAll().where('game_id', '=', gameId).executeTakeFirst();
  }

  async insertGame(q: Q, row: GameRow): Promise<void> {
    await q.insertInto('games').values(row).execute();
  }

  /**
   * Locks the game's row for the rest of the transaction (a no-op write: a row lock on
   * PostgreSQL, the write lock on SQLite), so concurrent key changes of one game run one after
   * the other and each sees the other's result. False when the game does not exist.
   */
  async lockGame(q: Transaction<DB>, gameId: string): Promise<boolean> {
    const r = await q
      .updateTable('games')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('game_id', '=', gameId)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async updateGame(q: Q, gameId: string, patch: Partial<GameRow>): Promise<void> {
    await q.updateTable('games').set(patch).where('game_id', '=', gameId).execute();
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
          updated_at: row.updated_at,
        }),
      )
      .execute();
  }
}
