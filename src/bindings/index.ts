import type { GameService } from '../games/service.js';
import { OutboundClient } from '../lib/outbound.js';
import type { PartnerService } from '../partners/service.js';
import type { DomainModule, Infra } from '../wiring/infra.js';
import { GmClient } from './gm.js';
import { RoleCache } from './role-cache.js';
import { registerBindingRoutes } from './routes.js';
import { BindingService } from './service.js';
import { BindingStore } from './store.js';

export interface BindingsDeps extends Infra {
  games: Pick<GameService, 'snapshot' | 'recordGmError'>;
  partners: Pick<PartnerService, 'snapshot'>;
}

export interface Bindings extends DomainModule {
  service: BindingService;
  /** Role data cache of the binding query (observable by tests and metrics). */
  roleCache: RoleCache;
}

/** Role bindings of partner users, and the query that reads role data from the game's GM. */
export function createBindings(d: BindingsDeps): Bindings {
  const { config, clock } = d;
  // A pool of its own: a game's GM often shares its notify_url's host, whose connections slow
  // notification attempts may all hold; a GM request queued behind them missed GM_TIMEOUT_MS.
  const gmOutbound = new OutboundClient({ blockPrivate: d.refuseInternalUrls });
  const roleCache = new RoleCache({ clock, ttlMs: config.roleCacheTtlMs, staleTtlMs: config.roleStaleTtlMs });
  const service = new BindingService({
    store: new BindingStore(d.database),
    partnerSnapshot: (id) => d.partners.snapshot(id),
    gameSnapshot: (id) => d.games.snapshot(id),
    gm: new GmClient({ outbound: gmOutbound, clock, ids: d.ids, timeoutMs: config.gmTimeoutMs }),
    roles: roleCache,
    clock,
    logger: d.logger,
    recordGmError: (gameId, message) => d.games.recordGmError(gameId, message),
  });
  return {
    service,
    roleCache,
    registerRoutes: (app) => registerBindingRoutes(app, service),
    jobs: [],
    close: () => gmOutbound.close(),
  };
}
