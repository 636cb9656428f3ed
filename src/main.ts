import { rmSync } from 'node:fs';
import pino from 'pino';
import { ConfigError, checkServiceConfig, loadConfig } from './config/index.js';
import { resolveSecretsKey } from './lib/secrets-key.js';
import { createLogger } from './logger.js';
import { createService } from './service.js';
import { installProcessWide } from './process-wide.js';
import { DatabaseUnusableError } from './db/index.js';
import { withoutPassword } from './lib/url-display.js';
import { SecretsKeyMismatchError } from './secrets/rotate.js';

/** Process entry point: `npm start`. */
async function main(): Promise<void> {
  installProcessWide();
  let config;
  try {
    config = loadConfig(process.env);
    checkServiceConfig(config);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  // pino's usual asynchronous standard output, made here so shutdown can wait for it to drain.
  const logOutput = pino.destination(process.stdout.fd);
  const logger = createLogger(config.logLevel, logOutput);
  for (const warning of config.warnings) logger.warn(warning);
  let secretsKey;
  try {
    secretsKey = resolveSecretsKey(config.secretsKey, config.dataDir, config.production, process.env.DATA_DIR || './data');
  } catch (e) {
    // A DATA_DIR that cannot hold the key file, or a key file that is not a key: configuration.
    process.stderr.write(`${(e as Error).message}\n`);
    process.exit(2);
  }
  const { key, source } = secretsKey;
  let service;
  try {
    service = await createService({ config, logger, secretsKey: key, secretsKeySource: secretsKey });
  } catch (e) {
    // The wrong SECRETS_KEY for this database: a configuration error (status 2), in one line.
    if (e instanceof SecretsKeyMismatchError) {
      // A key file made by this start opens nothing: not left behind to be taken for the key.
      if (secretsKey.created) rmSync(secretsKey.source, { force: true });
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    // A database that cannot be reached or opened at start: say which setting, without a stack.
    if (!(e instanceof DatabaseUnusableError)) throw e;
    process.stderr.write(`cannot use the database of DATABASE_URL=${withoutPassword(config.databaseUrl)}: ${e.message}\n`);
    process.exit(1);
  }
  let address: string;
  try {
    address = await service.listen();
  } catch (e) {
    // A HOST that does not resolve, a port in use or not allowed: say which, without a stack.
    await service.stop().catch(() => {});
    process.stderr.write(`cannot listen on HOST=${config.host} PORT=${config.port}: ${(e as Error).message}\n`);
    process.exit(1);
  }
  logger.info({ address, pid: process.pid, database: service.database.dialect, secretsKey: source }, 'service listening');
  if (config.adminTokenGenerated) {
    // Printed once, to the terminal only: the operator needs it for the admin API and console.
    process.stderr.write(
      `\nWARNING: ADMIN_TOKEN is not set. A token was generated for this run only:\n\n    ${config.adminToken}\n\n` +
        'Set ADMIN_TOKEN to keep one across restarts.\n\n',
    );
  }

  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) {
      // A second signal: no more waiting for the load balancer (SHUTDOWN_DELAY_MS).
      logger.info({ signal }, 'second signal: draining now');
      void service.stop({ now: true });
      return;
    }
    stopping = true;
    if (config.shutdownDelayMs > 0) {
      // /readyz answers 503 for SHUTDOWN_DELAY_MS, every other request is still served.
      logger.info({ signal, shutdown_delay_ms: config.shutdownDelayMs }, 'leaving');
    } else {
      logger.info({ signal }, 'draining');
    }
    service.stop().then(
      () => {
        logger.info('stopped');
        exitAfterLogs(0);
      },
      (err) => {
        logger.error({ err }, 'shutdown failed');
        exitAfterLogs(1);
      },
    );
  };
  // Log lines are written asynchronously, and a write still in flight is not part of the
  // synchronous flush pino runs at exit: exiting at once could lose the last lines of a shutdown
  // ("stopped"). Ending the output waits for that write; a hung output gets a second.
  const exitAfterLogs = (code: number) => {
    setTimeout(() => process.exit(code), 1000).unref();
    logOutput.once('close', () => process.exit(code));
    logOutput.end();
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  process.stderr.write(`fatal: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
