import type { Transaction } from 'kysely';
import { recordAudit, type Actor } from '../admin/audit.js';
import type { DB } from '../db/schema.js';
import { Errors } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import { SnapshotCache } from '../lib/snapshot-cache.js';
import type { ChannelStore, GameChannelRow } from './channel-store.js';
import type { ChannelView } from './channel-schemas.js';
import type { ChannelSettings, GameChannel, PaymentProvider } from './provider.js';

export interface ChannelServiceDeps {
  store: ChannelStore;
  providers: PaymentProvider[];
  secrets: SecretBox;
  clock: Clock;
  ids: IdGenerator;
  /** PUBLIC_BASE_URL: callback_url is built on it. */
  publicBaseUrl: string;
  /** How long a game's channels may be served from memory (other instances see changes this late). */
  cacheTtlMs?: number;
}

export const MASK = '***';

/**
 * A game's payment channels (payments.md 2): set, shown and removed by the operator; read by
 * the payment paths (cached, secrets opened). Secrets are sealed with SECRETS_KEY, never
 * returned (`"***"`) and `***` in the audit log. The games API's `sandbox_payments` is a view
 * of the `sandbox` channel (sandboxEnabled, setSandbox).
 */
export class ChannelService {
  private readonly providers: Map<string, PaymentProvider>;
  private readonly cache: SnapshotCache<Map<string, GameChannel>>;

  constructor(private readonly d: ChannelServiceDeps) {
    this.providers = new Map(d.providers.map((p) => [p.name, p]));
    this.cache = new SnapshotCache(d.clock, d.cacheTtlMs ?? 5000, (gameId) => this.load(gameId));
  }

  /** The game's channels for the payment paths (an empty map for a game with none). */
  async forGame(gameId: string): Promise<Map<string, GameChannel>> {
    return (await this.cache.getAsync(gameId)) ?? new Map();
  }

  invalidate(gameId: string): void {
    this.cache.invalidate(gameId);
  }

  callbackUrl(channel: string, gameId: string): string | null {
    return this.providers.get(channel)?.hasCallbacks ? `${this.d.publicBaseUrl}/v1/callbacks/${channel}/${encodeURIComponent(gameId)}` : null;
  }

  async list(gameId: string): Promise<ChannelView[]> {
    const { store } = this.d;
    if (!(await store.gameExists(store.db, gameId))) throw Errors.notFound(`game ${gameId} not found`);
    return (await store.list(store.db, gameId)).filter((r) => this.providers.has(r.channel)).map((r) => this.view(r));
  }

  async get(gameId: string, channel: string): Promise<ChannelView> {
    const { store } = this.d;
    const row = await store.find(store.db, gameId, channel);
    if (!row || !this.providers.has(channel)) throw Errors.notFound(`channel ${channel} of game ${gameId} not found`);
    return this.view(row);
  }

  /** Creates or replaces a channel; `body` has passed the provider's settingsBody. */
  async put(gameId: string, channel: string, body: { enabled: boolean } & ChannelSettings, by: Actor): Promise<ChannelView> {
    const { store, clock, ids, secrets } = this.d;
    const provider = this.providers.get(channel);
    if (!provider) throw Errors.notFound(`no payment channel ${channel}`);
    const { enabled, ...settings } = body;
    if (enabled) provider.checkSettings?.(settings);
    const { open, sealed } = splitSecrets(settings, provider.secretFields);
    const now = clock.now();
    const row = await store.transaction(async (trx) => {
      if (!(await store.gameExists(trx, gameId))) throw Errors.notFound(`game ${gameId} not found`);
      const before = await store.find(trx, gameId, channel);
      const next: GameChannelRow = {
        game_id: gameId,
        channel,
        enabled: enabled ? 1 : 0,
        settings: JSON.stringify(open),
        secrets_enc: Object.keys(sealed).length ? secrets.seal(JSON.stringify(sealed)) : null,
        created_at: before?.created_at ?? now,
        updated_at: now,
      };
      await store.upsert(trx, next);
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'game.channel.put', target: `${gameId}/${channel}`, detail: { enabled, ...masked(open, Object.keys(sealed)) } });
      return next;
    });
    this.invalidate(gameId);
    return this.view(row);
  }

  async delete(gameId: string, channel: string, by: Actor): Promise<void> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    await store.transaction(async (trx) => {
      if (!(await store.delete(trx, gameId, channel))) throw Errors.notFound(`channel ${channel} of game ${gameId} not found`);
      await recordAudit(trx, ids, now, { by, game: gameId, action: 'game.channel.delete', target: `${gameId}/${channel}` });
    });
    this.invalidate(gameId);
  }

  /** Of `gameIds`, those whose sandbox channel is enabled (the games API's sandbox_payments). */
  sandboxEnabled(q: Transaction<DB> | ChannelStore['db'], gameIds: string[]): Promise<Set<string>> {
    return this.d.store.sandboxEnabled(q, gameIds);
  }

  /** The games API's sandbox_payments, written as the sandbox channel in the caller's transaction. */
  async setSandbox(trx: Transaction<DB>, gameId: string, enabled: boolean, now: number): Promise<void> {
    const before = await this.d.store.find(trx, gameId, 'sandbox');
    await this.d.store.upsert(trx, { game_id: gameId, channel: 'sandbox', enabled: enabled ? 1 : 0, settings: before?.settings ?? '{}', secrets_enc: null, created_at: before?.created_at ?? now, updated_at: now });
  }

  private view(row: GameChannelRow): ChannelView {
    const settings = JSON.parse(row.settings) as ChannelSettings;
    const secretPaths = row.secrets_enc ? Object.keys(JSON.parse(this.d.secrets.open(row.secrets_enc)) as object) : [];
    return {
      game_id: row.game_id,
      channel: row.channel,
      enabled: row.enabled === 1,
      ...masked(settings, secretPaths),
      callback_url: this.callbackUrl(row.channel, row.game_id),
      created_at: row.created_at,
      updated_at: row.updated_at,
    };
  }

  private async load(gameId: string): Promise<Map<string, GameChannel>> {
    const { store, secrets } = this.d;
    const rows = await store.list(store.db, gameId);
    const out = new Map<string, GameChannel>();
    for (const r of rows) {
      const settings = JSON.parse(r.settings) as ChannelSettings;
      if (r.secrets_enc) for (const [path, value] of Object.entries(JSON.parse(secrets.open(r.secrets_enc)) as Record<string, unknown>)) setPath(settings, path, value);
      out.set(r.channel, { game_id: r.game_id, channel: r.channel, enabled: r.enabled === 1, settings });
    }
    return out;
  }
}

/** The settings without their secrets, and the secrets by dotted path. */
function splitSecrets(settings: ChannelSettings, paths: readonly string[]): { open: ChannelSettings; sealed: Record<string, unknown> } {
  const open = structuredClone(settings);
  const sealed: Record<string, unknown> = {};
  for (const path of paths) {
    const value = getPath(open, path);
    if (value === undefined) continue;
    sealed[path] = value;
    deletePath(open, path);
  }
  return { open, sealed };
}

function masked(settings: ChannelSettings, paths: readonly string[]): ChannelSettings {
  const out = structuredClone(settings);
  for (const path of paths) setPath(out, path, MASK);
  return out;
}

function getPath(o: Record<string, unknown>, path: string): unknown {
  let cur: unknown = o;
  for (const k of path.split('.')) cur = cur !== null && typeof cur === 'object' ? (cur as Record<string, unknown>)[k] : undefined;
  return cur;
}

function setPath(o: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.');
  let cur = o;
  for (const k of keys.slice(0, -1)) {
    if (cur[k] === null || typeof cur[k] !== 'object') cur[k] = {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[keys[keys.length - 1]!] = value;
}

function deletePath(o: Record<string, unknown>, path: string): void {
  const keys = path.split('.');
  const parent = getPath(o, keys.slice(0, -1).join('.') || '') as Record<string, unknown> | undefined;
  const holder = keys.length === 1 ? o : parent;
  if (holder && typeof holder === 'object') delete holder[keys[keys.length - 1]!];
}
