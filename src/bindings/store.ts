import { type Selectable } from 'kysely';
import type { BindingsTable } from '../db/schema.js';
import { prepare } from '../db/prepared.js';
import type { StoreDatabase } from '../db/database.js';
import { DatabaseStore } from '../db/database-store.js';

export type BindingRow = Selectable<BindingsTable>;
/** What a binding says beyond its key (game, partner, partner user). */
export type BoundRole = Pick<BindingRow, 'combo_id' | 'role_id' | 'bound_at'>;

/** Sort key of the operator listing: newest first, then the primary key. */
export type BindingCursor = [number, string, string, string];

export interface BindingFilter {
  game_id?: string;
  partner_id?: string;
  partner_user_id?: string;
  combo_id?: string;
}

/** Queries for partner-user bindings: one row per (game, partner, partner_user_id). */
export class BindingStore extends DatabaseStore {
  // Every query-binding runs this: compiled once (see db/prepared.ts).
  private readonly byKey;

  constructor(database: StoreDatabase) {
    super(database);
    // Only what the key does not tell: each text column read costs a string made through V8's
    // C++ API, the largest part of the read's cost.
    this.byKey = prepare<BoundRole>(database.db, (d) =>
      d
        .selectFrom('bindings')
        .select(['combo_id', 'role_id', 'bound_at'])
        .where('game_id', '=', '')
        .where('partner_id', '=', '')
        .where('partner_user_id', '=', ''),
    );
  }

  /** The role a partner user has bound in a game, and when. */
  async find(gameId: string, partnerId: string, partnerUserId: string): Promise<BoundRole | undefined> {
    return (await this.byKey(this.db, [gameId, partnerId, partnerUserId])).rows[0];
  }

  /** Creates or replaces the binding in one statement (no lost update between two binds). */
  async upsert(row: BindingRow): Promise<void> {
    await this.db
      .insertInto('bindings')
      .values(row)
      .onConflict((oc) =>
        oc.columns(['game_id', 'partner_id', 'partner_user_id']).doUpdateSet({ combo_id: row.combo_id, role_id: row.role_id, bound_at: row.bound_at }),
      )
      .execute();
  }

  async delete(gameId: string, partnerId: string, partnerUserId: string): Promise<void> {
    await this.db
      .deleteFrom('bindings')
      .where('game_id', '=', gameId)
      .where('partner_id', '=', partnerId)
      .where('partner_user_id', '=', partnerUserId)
      .execute();
  }

  list(filter: BindingFilter, after: BindingCursor | null, limit: number): Promise<BindingRow[]> {
    let q = this.db.selectFrom('bindings').selectAll();
    for (const col of ['game_id', 'partner_id', 'partner_user_id', 'combo_id'] as const) {
      const v = filter[col];
      if (v !== undefined) q = q.where(col, '=', v);
    }
    if (after) {
      q = q.where((eb) =>
        eb(eb.refTuple('bound_at', 'game_id', 'partner_id', 'partner_user_id'), '<', eb.tuple(after[0], after[1], after[2], after[3])),
      );
    }
    return q
      .orderBy('bound_at', 'desc')
      .orderBy('game_id', 'desc')
      .orderBy('partner_id', 'desc')
      .orderBy('partner_user_id', 'desc')
      .limit(limit)
      .execute();
  }
}
