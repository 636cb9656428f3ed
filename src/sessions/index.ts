import type { GameSnapshot } from '../games/service.js';
import type { DomainModule, Infra } from '../wiring/infra.js';
import { registerSessionRoutes } from './routes.js';
import { SessionService } from './service.js';
import { SessionStore } from './store.js';
import { SessionSweeper } from './sweeper.js';

export interface SessionsDeps extends Infra {
  games: (gameId: string) => Promise<GameSnapshot | null>;
}

export interface Sessions extends DomainModule {
  service: SessionService;
}

/** Players' game sessions, and the sweeper that closes those open past SESSION_TIMEOUT_SECONDS. */
export function createSessions(d: SessionsDeps): Sessions {
  const { database, config } = d;
  const service = new SessionService({
    store: new SessionStore(database),
    clock: d.clock,
    ids: d.ids,
    games: d.games,
    timeoutMs: config.sessionTimeoutMs,
    metrics: d.metrics,
  });
  return {
    service,
    registerRoutes: (app) => registerSessionRoutes(app, service),
    jobs: [new SessionSweeper(service, config.sweepIntervalMs, d.logger)],
  };
}
