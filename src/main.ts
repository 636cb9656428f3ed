import { ConfigError, loadConfig } from './config/index.js';
import { resolveSecretsKey } from './lib/secrets-key.js';
import { createLogger } from './logger.js';
import { createService } from './service.js';

/** Process entry point: `npm start`. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const logger = createLogger(config.logLevel);
  const { key, source } = resolveSecretsKey(config.secretsKey, config.dataDir, config.production);
  const service = await createService({ config, logger, secretsKey: key });
  const address = await service.listen();
  logger.info({ address, database: service.database.dialect, secretsKey: source }, 'service listening');
  if (config.adminTokenGenerated) {
    // Printed once, to the terminal only: the operator needs it for the admin API and console.
    process.stderr.write(
      `\nWARNING: ADMIN_TOKEN is not set. A token was generated for this run only:\n\n    ${config.adminToken}\n\n` +
        'Set ADMIN_TOKEN to keep one across restarts.\n\n',
    );
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining');
    service.stop().then(
      () => {
        logger.info('stopped');
        process.exit(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`fatal: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
