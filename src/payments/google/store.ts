import { sql, type Selectable } from 'kysely';
import type { GooglePurchasesTable } from '../../db/schema.js';
import { DatabaseStore } from '../../db/database-store.js';

export type GooglePurchaseRow = Selectable<GooglePurchasesTable>;
export type GooglePurchaseState = GooglePurchasesTable['state'];

/** Queries for google_purchases: one row per verified purchase token (0013_google_purchases). */
export class GooglePurchaseStore extends DatabaseStore {
  find(token: string): Promise<GooglePurchaseRow | undefined> {
    return this.db.selectFrom('google_purchases').selectAll().where('purchase_token', '=', token).executeTakeFirst();
  }

  /** The purchases recorded for an order (normally one). */
  findByOrder(orderId: string): Promise<GooglePurchaseRow[]> {
    return this.db.selectFrom('google_purchases').selectAll().where('order_id', '=', orderId).execute();
  }

  /** Records a verified purchase as owed; a token recorded before keeps its row. */
  async recordOwed(row: Omit<GooglePurchaseRow, 'state' | 'attempts' | 'last_error' | 'updated_at'>): Promise<void> {
    await this.db
      .insertInto('google_purchases')
      .values({ ...row, state: 'owed', attempts: 0, last_error: null, updated_at: row.created_at })
      .onConflict((oc) => oc.column('purchase_token').doNothing())
      .execute();
  }

  async settle(token: string, state: Exclude<GooglePurchaseState, 'owed'>, now: number, lastError: string | null = null): Promise<void> {
    await this.db.updateTable('google_purchases').set({ state, last_error: lastError, updated_at: now }).where('purchase_token', '=', token).execute();
  }

  /** Owed purchases due by `now`, oldest due first. */
  due(now: number, limit: number): Promise<GooglePurchaseRow[]> {
    return this.db
      .selectFrom('google_purchases')
      .selectAll()
      .where('state', '=', 'owed')
      .where('next_attempt_at', '<=', now)
      .orderBy('next_attempt_at')
      .limit(limit)
      .execute();
  }

  /**
   * Takes a due row for one attempt: moves its next attempt to `retryAt`, guarded on the time
   * just read, so of several instances exactly one gets it. False when another took it.
   */
  async claim(row: GooglePurchaseRow, retryAt: number, now: number): Promise<boolean> {
    const r = await this.db
      .updateTable('google_purchases')
      .set({ next_attempt_at: retryAt, attempts: row.attempts + 1, updated_at: now })
      .where('purchase_token', '=', row.purchase_token)
      .where('state', '=', 'owed')
      .where('next_attempt_at', '=', row.next_attempt_at)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /**
   * Games with an enabled `google` channel and a product whose store_product_ids.google is
   * `storeProductId` (a submission without an order token names only the store product).
   */
  async gamesSelling(storeProductId: string): Promise<string[]> {
    const like = `%"google":${JSON.stringify(storeProductId).replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const rows = await this.db
      .selectFrom('products')
      .innerJoin('game_channels', (j) => j.onRef('game_channels.game_id', '=', 'products.game_id').on('game_channels.channel', '=', 'google').on('game_channels.enabled', '=', 1))
      .select(['products.game_id', 'products.store_product_ids'])
      .where(sql<boolean>`products.store_product_ids like ${like} escape '\\'`)
      .execute();
    const games = rows.filter((r) => (JSON.parse(r.store_product_ids ?? '{}') as { google?: string }).google === storeProductId).map((r) => r.game_id);
    return [...new Set(games)];
  }

  async noteError(token: string, error: string, now: number): Promise<void> {
    await this.db.updateTable('google_purchases').set({ last_error: error.slice(0, 500), updated_at: now }).where('purchase_token', '=', token).execute();
  }
}
