import type { GameSnapshot } from '../games/service.js';
import type { DomainModule, Infra } from '../wiring/infra.js';
import { NppaClient } from './nppa-client.js';
import { ComplianceGuard, PlayerService } from './players.js';
import { registerComplianceRoutes } from './routes.js';
import { ComplianceStore } from './store.js';
import { NppaUploader } from './uploader.js';

export interface ComplianceDeps extends Infra {
  /** A game's snapshot (cached), and as stored now. */
  games: (gameId: string) => Promise<GameSnapshot | null>;
  storedGame: (gameId: string) => Promise<GameSnapshot | null>;
  /** A player's online time per day (the sessions domain). */
  onlineByDay: (gameId: string, comboId: string) => Promise<{ date: string; online_seconds: number }[]>;
}

export interface Compliance extends DomainModule {
  /** Checks a minor's purchase against the limits when an order is created. */
  guard: ComplianceGuard;
  players: PlayerService;
}

/** Real-name players, minors' purchase limits, and the upload of behaviour events to the NPPA. */
export function createCompliance(d: ComplianceDeps): Compliance {
  const { database, config } = d;
  const store = new ComplianceStore(database);
  const players = new PlayerService({ store, clock: d.clock, ids: d.ids, games: d.games, onlineByDay: d.onlineByDay });
  // The national system's base URL is operator configuration (not caller-given): no address blocking.
  const nppaClient = new NppaClient();
  const uploader = new NppaUploader({
    metrics: d.metrics,
    store,
    client: nppaClient,
    games: d.games,
    storedGame: d.storedGame,
    clock: d.clock,
    logger: d.logger,
    baseUrl: config.nppaBaseUrl,
    pollIntervalMs: config.nppa.pollIntervalMs,
    retryBaseMs: config.nppa.retryBaseMs,
    rateLimitPauseMs: config.nppa.rateLimitPauseMs,
    concurrency: config.nppa.concurrency,
  });
  return {
    guard: new ComplianceGuard(store),
    players,
    registerRoutes: (app) => registerComplianceRoutes(app, players),
    jobs: [uploader],
    close: () => nppaClient.close(),
  };
}
