import { randomUUID } from 'node:crypto';
import { DatabaseStore } from '../../db/database-store.js';

/** The StoreKit appAccountToken of orders (order_account_tokens): one UUID per order, unique. */
export class AppAccountTokens extends DatabaseStore {
  /** The order's token, made on first use; the same one every time after. */
  async forOrder(orderId: string, now: number): Promise<string> {
    const found = await this.find(orderId);
    if (found) return found;
    await this.db
      .insertInto('order_account_tokens')
      .values({ app_account_token: randomUUID(), order_id: orderId, created_at: now })
      .onConflict((oc) => oc.column('order_id').doNothing())
      .execute();
    return (await this.find(orderId)) as string;
  }

  /** The order an appAccountToken was handed out for. */
  async orderOf(token: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('order_account_tokens').select('order_id').where('app_account_token', '=', token.toLowerCase()).executeTakeFirst();
    return r?.order_id;
  }

  private async find(orderId: string): Promise<string | undefined> {
    const r = await this.db.selectFrom('order_account_tokens').select('app_account_token').where('order_id', '=', orderId).executeTakeFirst();
    return r?.app_account_token;
  }
}
