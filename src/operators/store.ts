import type { Kysely, Selectable, Transaction } from 'kysely';
import type { DB, OperatorApiKeysTable, OperatorInvitationsTable, OperatorSessionsTable, OperatorsTable } from '../db/schema.js';
import { DatabaseStore } from '../db/database-store.js';

export type OperatorRow = Selectable<OperatorsTable>;
export type InvitationRow = Selectable<OperatorInvitationsTable>;
export type SessionRow = Selectable<OperatorSessionsTable>;
export type ApiKeyRow = Selectable<OperatorApiKeysTable>;
type Q = Kysely<DB> | Transaction<DB>;

/** Queries for operator accounts, their invitations, console sessions and API keys. */
export class OperatorStore extends DatabaseStore {
  findOperator(q: Q, operatorId: string): Promise<OperatorRow | undefined> {
    return q.selectFrom('operators').selectAll().where('operator_id', '=', operatorId).executeTakeFirst();
  }

  findByEmail(q: Q, email: string): Promise<OperatorRow | undefined> {
    return q.selectFrom('operators').selectAll().where('email', '=', email).executeTakeFirst();
  }

  listOperators(q: Q): Promise<OperatorRow[]> {
    return q.selectFrom('operators').selectAll().orderBy('created_at').orderBy('operator_id').execute();
  }

  async insertOperator(q: Q, row: OperatorRow): Promise<void> {
    await q.insertInto('operators').values(row).execute();
  }

  async updateOperator(q: Q, operatorId: string, patch: Partial<OperatorRow>): Promise<void> {
    await q.updateTable('operators').set(patch).where('operator_id', '=', operatorId).execute();
  }

  /**
   * Takes a TOTP time step for an account: false when a code of this step or a later one was
   * taken already (operators.md 1: a code signs in once).
   */
  async useTotpStep(q: Q, operatorId: string, step: number): Promise<boolean> {
    const r = await q
      .updateTable('operators')
      .set({ totp_last_step: step })
      .where('operator_id', '=', operatorId)
      .where((w) => w.or([w('totp_last_step', 'is', null), w('totp_last_step', '<', step)]))
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async insertInvitation(q: Q, row: InvitationRow): Promise<void> {
    await q.insertInto('operator_invitations').values(row).execute();
  }

  findInvitation(q: Q, tokenHash: string): Promise<InvitationRow | undefined> {
    return q.selectFrom('operator_invitations').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  /** Marks an unused invitation used; false when it was used already (by a concurrent request). */
  async useInvitation(q: Q, tokenHash: string, now: number): Promise<boolean> {
    const r = await q.updateTable('operator_invitations').set({ used_at: now }).where('token_hash', '=', tokenHash).where('used_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Ends an account's open invitations (a new one replaces them). */
  async closeInvitations(q: Q, operatorId: string, now: number): Promise<void> {
    await q.updateTable('operator_invitations').set({ used_at: now }).where('operator_id', '=', operatorId).where('used_at', 'is', null).execute();
  }

  async insertSession(q: Q, row: SessionRow): Promise<void> {
    await q.insertInto('operator_sessions').values(row).execute();
  }

  findSession(q: Q, tokenHash: string): Promise<SessionRow | undefined> {
    return q.selectFrom('operator_sessions').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  }

  async touchSession(q: Q, sessionId: string, now: number): Promise<void> {
    await q.updateTable('operator_sessions').set({ last_seen_at: now }).where('session_id', '=', sessionId).execute();
  }

  /** Open sessions of an account, newest first. */
  listSessions(q: Q, operatorId: string, idleSince: number): Promise<SessionRow[]> {
    return q
      .selectFrom('operator_sessions')
      .selectAll()
      .where('operator_id', '=', operatorId)
      .where('revoked_at', 'is', null)
      .where('last_seen_at', '>', idleSince)
      .orderBy('created_at', 'desc')
      .orderBy('session_id', 'desc')
      .execute();
  }

  /** Revokes one session of an account (false: none such open) or, without sessionId, all of them. */
  async revokeSessions(q: Q, operatorId: string, now: number, sessionId?: string): Promise<boolean> {
    let query = q.updateTable('operator_sessions').set({ revoked_at: now }).where('operator_id', '=', operatorId).where('revoked_at', 'is', null);
    if (sessionId !== undefined) query = query.where('session_id', '=', sessionId);
    const r = await query.executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async insertApiKey(q: Q, row: ApiKeyRow): Promise<void> {
    await q.insertInto('operator_api_keys').values(row).execute();
  }

  findApiKey(q: Q, keyHash: string): Promise<ApiKeyRow | undefined> {
    return q.selectFrom('operator_api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
  }

  findApiKeyById(q: Q, keyId: string): Promise<ApiKeyRow | undefined> {
    return q.selectFrom('operator_api_keys').selectAll().where('key_id', '=', keyId).executeTakeFirst();
  }

  listApiKeys(q: Q): Promise<ApiKeyRow[]> {
    return q.selectFrom('operator_api_keys').selectAll().orderBy('created_at').orderBy('key_id').execute();
  }

  async touchApiKey(q: Q, keyId: string, now: number): Promise<void> {
    await q.updateTable('operator_api_keys').set({ last_used_at: now }).where('key_id', '=', keyId).execute();
  }

  async revokeApiKey(q: Q, keyId: string, now: number): Promise<boolean> {
    const r = await q.updateTable('operator_api_keys').set({ revoked_at: now }).where('key_id', '=', keyId).where('revoked_at', 'is', null).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** The game of an order or notification, for the scope check (null: none such). */
  async gameOf(q: Q, table: 'orders' | 'notifications', id: string): Promise<string | null> {
    const row =
      table === 'orders'
        ? await q.selectFrom('orders').select('game_id').where('order_id', '=', id).executeTakeFirst()
        : await q.selectFrom('notifications').select('game_id').where('notification_id', '=', id).executeTakeFirst();
    return row?.game_id ?? null;
  }
}
