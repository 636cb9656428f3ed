import type { DomainModule, Infra } from '../wiring/infra.js';
import { registerGameRoutes } from './routes.js';
import { GameService, type SandboxChannel } from './service.js';
import { GameStore } from './store.js';
import { registerUnsupportedSdkRoutes } from './unsupported-routes.js';

export interface GamesDeps extends Infra {
  /** The game's `sandbox` payment channel (the payments domain's channel settings). */
  sandbox: SandboxChannel;
}

export interface Games extends DomainModule {
  service: GameService;
}

/** Games, their keys and products, and the server API methods this service does not provide. */
export function createGames(d: GamesDeps): Games {
  const { database, logger } = d;
  const service = new GameService({
    store: new GameStore(database),
    sandbox: d.sandbox,
    clock: d.clock,
    ids: d.ids,
    secrets: d.secrets,
    refuseInternalUrls: d.refuseInternalUrls,
    onKeyUseError: (err, gameId) => logger.warn({ err, game_id: gameId }, 'storing the key a game signed with failed'),
  });
  return {
    service,
    registerRoutes: (app) => {
      registerGameRoutes(app, service);
      registerUnsupportedSdkRoutes(app);
    },
    jobs: [],
  };
}
