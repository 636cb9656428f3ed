import type { DomainModule, Infra } from '../wiring/infra.js';
import { registerPartnerRoutes } from './routes.js';
import { PartnerService } from './service.js';
import { PartnerStore } from './store.js';

export interface Partners extends DomainModule {
  service: PartnerService;
}

/** Partners: the platforms that query role bindings with signed requests. */
export function createPartners(d: Infra): Partners {
  const { database } = d;
  const service = new PartnerService({ store: new PartnerStore(database), clock: d.clock, ids: d.ids, secrets: d.secrets });
  return {
    service,
    registerRoutes: (app) => registerPartnerRoutes(app, service),
    jobs: [],
  };
}
