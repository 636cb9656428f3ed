import type { Logger } from 'pino';
import { Errors } from '../errors.js';
import type { GameSnapshot } from '../games/service.js';
import type { Clock } from '../lib/clock.js';
import { decodeCursor, encodeCursor } from '../lib/page-cursor.js';
import type { PartnerSnapshot } from '../partners/service.js';
import { GmUnavailableError, type GmClient } from './gm.js';
import type { RoleCache } from './role-cache.js';
import type { AdminBinding, BindBody, BindingResponse, ListBindingsQuery, QueryBindingQuery, UnbindBody } from './schemas.js';
import type { BindingCursor, BindingRow, BindingStore } from './store.js';

export interface BindingServiceDeps {
  store: BindingStore;
  /** Cached partner and game views (the partner and game domains own them). */
  partnerSnapshot(partnerId: string): Promise<PartnerSnapshot | null>;
  gameSnapshot(gameId: string): Promise<GameSnapshot | null>;
  gm: GmClient;
  roles: RoleCache;
  clock: Clock;
  logger?: Logger;
  /** Keeps the game's last GM error for the operator (GameService.recordGmError). */
  recordGmError?: (gameId: string, message: string) => Promise<void>;
}

const toSeconds = (ms: number) => Math.floor(ms / 1000);

/** Partner-user bindings (PROTOCOL 9) and the partner binding query (PROTOCOL 7). */
export class BindingService {
  constructor(private readonly d: BindingServiceDeps) {}

  /** The game binds a partner user to one of its roles; binding again replaces the binding. */
  async bind(game: GameSnapshot, body: BindBody): Promise<{ bound_at: number }> {
    const gameId = game.game.game_id;
    const partner = await this.d.partnerSnapshot(body.partner_id);
    // One answer for both: a game learns nothing of the partners it is not granted to.
    if (!partner || !partner.games.has(gameId)) {
      throw Errors.invalidRequest(`partner_id: partner ${body.partner_id} does not exist or is not granted this game`);
    }
    const boundAt = this.d.clock.now();
    await this.d.store.upsert({ game_id: gameId, partner_id: body.partner_id, partner_user_id: body.partner_user_id, combo_id: body.combo_id, role_id: body.role_id, bound_at: boundAt });
    return { bound_at: toSeconds(boundAt) };
  }

  /** Removes the binding; nothing bound is not an error. */
  async unbind(game: GameSnapshot, body: UnbindBody): Promise<void> {
    await this.d.store.delete(game.game.game_id, body.partner_id, body.partner_user_id);
  }

  /** GET /v1/query-binding: the bound role, with role data from the game (cached). */
  async query(partner: PartnerSnapshot, q: QueryBindingQuery): Promise<BindingResponse> {
    const partnerId = partner.partner.partner_id;
    // Unknown and ungranted games answer alike: a partner learns nothing of other games.
    const game = partner.games.has(q.game_id) ? await this.d.gameSnapshot(q.game_id) : null;
    if (!game) throw Errors.invalidRequest(`game_id: game ${q.game_id} is unknown or not granted to this partner`);
    const binding = await this.d.store.find(q.game_id, partnerId, q.partner_user_id);
    if (!binding) throw Errors.bindingNotFound(`partner user ${q.partner_user_id} has no role bound in game ${q.game_id}`);
    const fetch = () => this.d.gm.listRoles({ gameId: q.game_id, gmUrl: game.game.gm_url, secret: game.secrets[0] }, binding.combo_id);
    // Recorded once per GM call (concurrent queries share one: RoleCache), stale copy served or not.
    const fetchRecorded = () =>
      fetch().catch(async (e: unknown) => {
        if (e instanceof GmUnavailableError) await this.recordGmError(q.game_id, e);
        throw e;
      });
    try {
      const { role, stale } = await this.d.roles.get(q.game_id, binding.combo_id, binding.role_id, fetchRecorded, binding.bound_at);
      if (stale) this.d.logger?.warn({ gameId: q.game_id }, 'GM unreachable: served a cached role');
      return { bound_at: toSeconds(binding.bound_at), role };
    } catch (e) {
      if (!(e instanceof GmUnavailableError)) throw e;
      this.d.logger?.warn({ gameId: q.game_id, reason: e.message }, 'GM unreachable: no cached role to serve');
      // The partner learns what is wrong with the game (PROTOCOL 7: 500), never its URL.
      throw Errors.internal(`role data is unavailable: ${e.reason}`);
    }
  }

  /** Records a failed GM call for the operator; a failure to record is logged, not answered. */
  private async recordGmError(gameId: string, e: GmUnavailableError): Promise<void> {
    try {
      await this.d.recordGmError?.(gameId, e.message);
    } catch (err) {
      this.d.logger?.error({ err, gameId }, 'could not record the GM error');
    }
  }

  /** Operator listing, newest first, cursor paging. */
  async list(q: ListBindingsQuery): Promise<{ data: AdminBinding[]; next_cursor: string | null }> {
    const limit = q.limit ?? 50;
    const after = q.cursor === undefined ? null : decodeCursor<BindingCursor>(q.cursor, isBindingCursor);
    const rows = await this.d.store.list(q, after, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    const next = rows.length > limit && last ? encodeCursor([last.bound_at, last.game_id, last.partner_id, last.partner_user_id]) : null;
    return { data: page.map(toAdminBinding), next_cursor: next };
  }
}

function isBindingCursor(v: unknown): boolean {
  return Array.isArray(v) && v.length === 4 && Number.isSafeInteger(v[0]) && v.slice(1).every((s) => typeof s === 'string');
}

function toAdminBinding(r: BindingRow): AdminBinding {
  return { game_id: r.game_id, partner_id: r.partner_id, partner_user_id: r.partner_user_id, combo_id: r.combo_id, role_id: r.role_id, bound_at: r.bound_at };
}
