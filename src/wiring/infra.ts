import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { Database } from '../db/index.js';
import type { ApiApp } from '../http/route-info.js';
import type { Clock } from '../lib/clock.js';
import type { IdGenerator } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { ServiceMetrics } from '../observability/metrics.js';

/** Background work (dispatchers, sweepers, uploaders): started after listen, stopped on drain. */
export interface BackgroundJob {
  start(): void;
  stop(): Promise<void>;
}

/** The shared parts of one service instance that every domain factory is given. */
export interface Infra {
  config: Config;
  logger: Logger;
  clock: Clock;
  ids: IdGenerator;
  /** Seals stored secrets (SECRETS_KEY, and SECRETS_KEY_PREVIOUS during a rotation). */
  secrets: SecretBox;
  database: Database;
  /** Prometheus metrics; domains report through its DomainMetrics methods. */
  metrics: ServiceMetrics;
  /** notify_url and gm_url are caller-given: internal addresses are refused in production. */
  refuseInternalUrls: boolean;
}

/** What a domain factory hands the composition root besides its services. */
export interface DomainModule {
  /** Mounts the domain's routes. */
  registerRoutes(app: ApiApp): void;
  /** Started after listen, stopped on drain. */
  jobs: BackgroundJob[];
  /** Releases what the domain holds open (connection pools), after its jobs stopped. */
  close?(): Promise<void>;
}
