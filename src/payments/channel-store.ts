import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, GameChannelsTable } from '../db/schema.js';
import { DatabaseStore } from '../db/database-store.js';

export type GameChannelRow = Selectable<GameChannelsTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for games' payment channels (game_channels, one row per game and channel). */
export class ChannelStore extends DatabaseStore {
  async gameExists(q: Q, gameId: string): Promise<boolean> {
    return (await q.selectFrom('games').select('game_id').where('game_id', '=', gameId).executeTakeFirst()) !== undefined;
  }

  list(q: Q, gameId: string): Promise<GameChannelRow[]> {
    return q.selectFrom('game_channels').selectAll().where('game_id', '=', gameId).orderBy('channel').execute();
  }

  find(q: Q, gameId: string, channel: string): Promise<GameChannelRow | undefined> {
    return q.selectFrom('game_channels').selectAll().where('game_id', '=', gameId).where('channel', '=', channel).executeTakeFirst();
  }

  async upsert(q: Q, row: GameChannelRow): Promise<void> {
    await q
      .insertInto('game_channels')
      .values(row)
      .onConflict((oc) => oc.columns(['game_id', 'channel']).doUpdateSet({ enabled: row.enabled, settings: row.settings, secrets_enc: row.secrets_enc, updated_at: row.updated_at }))
      .execute();
  }

  async delete(q: Q, gameId: string, channel: string): Promise<boolean> {
    const r = await q.deleteFrom('game_channels').where('game_id', '=', gameId).where('channel', '=', channel).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  /** Of `gameIds`, those whose sandbox channel is enabled. */
  async sandboxEnabled(q: Q, gameIds: string[]): Promise<Set<string>> {
    if (!gameIds.length) return new Set();
    const rows = await q
      .selectFrom('game_channels')
      .select('game_id')
      .where('game_id', 'in', gameIds)
      .where('channel', '=', 'sandbox')
      .where('enabled', '=', 1)
      .execute();
    return new Set(rows.map((r) => r.game_id));
  }
}
