import { recordAudit } from '../admin/audit.js';
import { Errors } from '../errors.js';
import { rethrowConflict } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import { hasRole, type Caller, type Principal, type Role } from './roles.js';
import type { ApiKey, CreateApiKeyBody, CreateOperatorBody, Operator, PatchOperatorBody } from './schemas.js';
import { hashPassword, newToken, tokenHash } from './secrets.js';
import type { ApiKeyRow, OperatorRow, OperatorStore } from './store.js';

/** How long an invitation link works (operators.md 1). */
export const INVITATION_TTL_MS = 72 * 3600_000;

export interface AccountDeps {
  store: OperatorStore;
  clock: Clock;
  ids: IdGenerator;
  /** PUBLIC_BASE_URL: invitation links point at its console. */
  publicBaseUrl: string;
  /** Told when an account's sessions end (disabled, password changed). */
  onSessionsRevoked?(operatorId: string): void;
}

export const parseGames = (games: string | null): string[] | null => (games === null ? null : (JSON.parse(games) as string[]));
const storeGames = (games: string[] | null | undefined): string | null => (games ? JSON.stringify([...games].sort()) : null);

export function toOperator(row: OperatorRow): Operator {
  return {
    operator_id: row.operator_id,
    email: row.email,
    name: row.name,
    role: row.role as Role,
    games: parseGames(row.games),
    status: row.disabled_at !== null ? 'disabled' : row.password_hash === null ? 'invited' : 'active',
    totp_enabled: row.totp_enabled_at !== null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function toApiKey(row: ApiKeyRow): ApiKey {
  const { key_hash: _hash, games, role, ...rest } = row;
  return { ...rest, role: role as Role, games: parseGames(games) };
}

export const normalEmail = (email: string): string => email.trim().toLowerCase();

/**
 * Whether `by` may give or change an account or key of `role`: never above its own role, and
 * an owner's only when `by` is an owner (operators.md 1: admin manages operators below owner).
 */
function mayManage(by: Principal, role: Role): void {
  if (!hasRole(by.role, role)) throw Errors.forbidden(`an account or key cannot be given a role above the caller's (${by.role})`);
  if (role === 'owner' && by.role !== 'owner') throw Errors.forbidden('only an owner manages owners');
}

/** Operator accounts, their invitations and API keys (operators.md 1). */
export class AccountService {
  constructor(private readonly d: AccountDeps) {}

  async create(body: CreateOperatorBody, by: Caller) {
    const { store, clock, ids } = this.d;
    mayManage(by, body.role);
    const now = clock.now();
    const row: OperatorRow = {
      operator_id: prefixedId('op', ids),
      email: normalEmail(body.email),
      name: body.name,
      role: body.role,
      games: storeGames(body.games),
      password_hash: null,
      totp_secret: null,
      totp_enabled_at: null,
      totp_last_step: null,
      disabled_at: null,
      created_by: by.actor,
      created_at: now,
      updated_at: now,
    };
    const invitation = await store
      .transaction(async (trx) => {
        if (await store.findByEmail(trx, row.email)) throw Errors.conflict(`an operator with email ${row.email} exists`);
        await store.insertOperator(trx, row);
        await recordAudit(trx, ids, now, { by, game: null, action: 'operator.create', target: row.operator_id, detail: { email: row.email, name: row.name, role: row.role, games: parseGames(row.games) } });
        return this.invite(trx, row.operator_id, now);
      })
      .catch(rethrowConflict(`an operator with email ${row.email} exists`));
    return { ...toOperator(row), invitation };
  }

  /** A new invitation link for an account (its earlier ones stop working); resets its password on use. */
  async reinvite(operatorId: string, by: Caller) {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    return store.transaction(async (trx) => {
      const row = await this.manageable(trx, operatorId, by);
      await recordAudit(trx, ids, now, { by, game: null, action: 'operator.invite', target: row.operator_id });
      return this.invite(trx, operatorId, now);
    });
  }

  private async invite(trx: Parameters<Parameters<OperatorStore['transaction']>[0]>[0], operatorId: string, now: number) {
    const token = newToken('inv_');
    await this.d.store.closeInvitations(trx, operatorId, now);
    await this.d.store.insertInvitation(trx, { token_hash: tokenHash(token), operator_id: operatorId, created_at: now, expires_at: now + INVITATION_TTL_MS, used_at: null });
    return { invitation_url: `${this.d.publicBaseUrl}/console/invite/${token}`, invitation_token: token, expires_at: now + INVITATION_TTL_MS };
  }

  private async manageable(q: Parameters<OperatorStore['findOperator']>[0], operatorId: string, by: Principal): Promise<OperatorRow> {
    const row = await this.d.store.findOperator(q, operatorId);
    if (!row) throw Errors.notFound(`operator ${operatorId} not found`);
    mayManage(by, row.role as Role);
    return row;
  }

  async list(): Promise<Operator[]> {
    return (await this.d.store.listOperators(this.d.store.db)).map(toOperator);
  }

  async get(operatorId: string): Promise<Operator> {
    const row = await this.d.store.findOperator(this.d.store.db, operatorId);
    if (!row) throw Errors.notFound(`operator ${operatorId} not found`);
    return toOperator(row);
  }

  async patch(operatorId: string, body: PatchOperatorBody, by: Caller): Promise<Operator> {
    const { store, clock, ids } = this.d;
    if (body.role) mayManage(by, body.role);
    if (by.operatorId === operatorId && (body.role !== undefined || body.disabled !== undefined || body.games !== undefined)) {
      throw Errors.forbidden('an account cannot change its own role, games or status');
    }
    const now = clock.now();
    const row = await store.transaction(async (trx) => {
      const current = await this.manageable(trx, operatorId, by);
      const patch: Partial<OperatorRow> = { updated_at: now };
      if (body.name !== undefined) patch.name = body.name;
      if (body.role !== undefined) patch.role = body.role;
      if (body.games !== undefined) patch.games = storeGames(body.games);
      if (body.disabled !== undefined) patch.disabled_at = body.disabled ? (current.disabled_at ?? now) : null;
      await store.updateOperator(trx, operatorId, patch);
      if (body.disabled) {
        await store.revokeSessions(trx, operatorId, now);
        await store.closeInvitations(trx, operatorId, now);
      }
      await recordAudit(trx, ids, now, { by, game: null, action: 'operator.update', target: operatorId, detail: body });
      return { ...current, ...patch };
    });
    if (body.disabled) this.d.onSessionsRevoked?.(operatorId);
    return toOperator(row);
  }

  /** The invitation behind a link, for the console's page (404 when unknown, used or expired). */
  async invitation(token: string): Promise<{ row: OperatorRow; expires_at: number }> {
    const { store, clock } = this.d;
    const inv = await store.findInvitation(store.db, tokenHash(token));
    if (!inv || inv.used_at !== null || inv.expires_at <= clock.now()) throw Errors.notFound('this invitation link is unknown, used or expired: ask for a new one');
    const row = await store.findOperator(store.db, inv.operator_id);
    if (!row || row.disabled_at !== null) throw Errors.notFound('this invitation link is unknown, used or expired: ask for a new one');
    return { row, expires_at: inv.expires_at };
  }

  /** Sets the account's password from an invitation; the link works once. */
  async accept(token: string, password: string, address: string): Promise<Operator> {
    const { store, clock, ids } = this.d;
    const { row } = await this.invitation(token);
    const hash = await hashPassword(password);
    const now = clock.now();
    await store.transaction(async (trx) => {
      if (!(await store.useInvitation(trx, tokenHash(token), now))) throw Errors.notFound('this invitation link is unknown, used or expired: ask for a new one');
      await store.updateOperator(trx, row.operator_id, { password_hash: hash, updated_at: now });
      await store.revokeSessions(trx, row.operator_id, now);
      await recordAudit(trx, ids, now, { by: { actor: row.email, address }, game: null, action: 'operator.accept_invitation', target: row.operator_id });
    });
    this.d.onSessionsRevoked?.(row.operator_id);
    return toOperator({ ...row, password_hash: hash, updated_at: now });
  }

  async createApiKey(body: CreateApiKeyBody, by: Caller) {
    const { store, clock, ids } = this.d;
    mayManage(by, body.role);
    const now = clock.now();
    if (body.expires_at != null && body.expires_at <= now) throw Errors.invalidRequest('expires_at must be in the future');
    const key = newToken('ak_');
    const row: ApiKeyRow = {
      key_id: prefixedId('akey', ids),
      key_hash: tokenHash(key),
      name: body.name,
      role: body.role,
      games: storeGames(body.games),
      created_by: by.actor,
      created_at: now,
      expires_at: body.expires_at ?? null,
      last_used_at: null,
      revoked_at: null,
    };
    await store.transaction(async (trx) => {
      await store.insertApiKey(trx, row);
      await recordAudit(trx, ids, now, { by, game: null, action: 'api_key.create', target: row.key_id, detail: { name: row.name, role: row.role, games: parseGames(row.games), expires_at: row.expires_at } });
    });
    return { ...toApiKey(row), api_key: key };
  }

  async listApiKeys(): Promise<ApiKey[]> {
    return (await this.d.store.listApiKeys(this.d.store.db)).map(toApiKey);
  }

  async revokeApiKey(keyId: string, by: Caller): Promise<void> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    await store.transaction(async (trx) => {
      const row = await store.findApiKeyById(trx, keyId);
      if (!row || row.revoked_at !== null) throw Errors.notFound(`API key ${keyId} not found`);
      mayManage(by, row.role as Role);
      await store.revokeApiKey(trx, keyId, now);
      await recordAudit(trx, ids, now, { by, game: null, action: 'api_key.revoke', target: keyId, detail: { name: row.name } });
    });
  }
}
