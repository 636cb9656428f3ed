#!/usr/bin/env node
import { ConfigError } from './config/index.js';
import { apiCommand } from './cli/api.js';
import { backupCommand } from './cli/backup.js';
import { ApiFailure } from './cli/client.js';
import { gamesCommand } from './cli/games.js';
import { CommandError, UsageError, type Command, type Io } from './cli/io.js';
import { keysCommand } from './cli/keys.js';
import { listenCommand } from './cli/listen.js';
import { migrateCommand } from './cli/migrate.js';
import { nppaTestCommand } from './cli/nppa-test.js';
import { apiKeysCommand, operatorsCommand } from './cli/operators.js';
import { rotateSecretsCommand } from './cli/rotate-secrets.js';
import { notifyCommand } from './cli/notify.js';
import { notificationsCommand } from './cli/notifications.js';
import { ordersCommand } from './cli/orders.js';
import { reconcileCommand } from './cli/reconcile.js';
import { productsCommand } from './cli/products.js';
import { channelsCommand } from './cli/channels.js';
import { signCommand } from './cli/sign.js';
import { packageVersion } from './lib/package-info.js';

/**
 * Command-line entry: `npm run cli -- <command>` or the `combo-platform` bin. One file per
 * command group under src/cli/. Exit status: 0 done, 1 the command failed (API error,
 * unreachable service, receiver refused), 2 wrong usage or configuration.
 */
const COMMANDS: Command[] = [gamesCommand, keysCommand, productsCommand, channelsCommand, apiCommand, ordersCommand, reconcileCommand, signCommand, notifyCommand, notificationsCommand, listenCommand, migrateCommand, backupCommand, rotateSecretsCommand, nppaTestCommand, operatorsCommand, apiKeysCommand];

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return (
    'usage: combo-platform <command> [arguments] [--help]\n\ncommands:\n' +
    COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}\n`).join('') +
    '\nAdmin commands read COMBO_URL and ADMIN_TOKEN (the admin token or an API key) from the environment (or --url, --token).\n' +
    'Full reference: docs/cli.md; the API itself: GET /docs on the service.\n'
  );
}

function processIo(): Io {
  let interrupted: Promise<void> | null = null;
  return {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    env: process.env,
    readStdin: async () => {
      const chunks: Buffer[] = [];
      for await (const c of process.stdin) chunks.push(c as Buffer);
      return Buffer.concat(chunks).toString('utf8');
    },
    // Installed only when a long-running command asks, so Ctrl-C stops other commands at once.
    interrupted: () => (interrupted ??= new Promise((resolve) => process.once('SIGINT', () => resolve()))),
  };
}

async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    const cmd = COMMANDS.find((c) => c.name === rest[0]);
    io.out(cmd ? `${cmd.help}\n` : usage());
    return 0;
  }
  if (name === '--version') {
    io.out(`${packageVersion()}\n`);
    return 0;
  }
  const cmd = COMMANDS.find((c) => c.name === name);
  if (!cmd) {
    io.err(`error: unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(`${cmd.help}\n`);
    return 0;
  }
  try {
    return await cmd.run(rest, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`error: ${e.message}\n\n${cmd.help}\n`);
      return e.exitCode;
    }
    if (e instanceof ApiFailure && rest.includes('--json')) io.out(`${JSON.stringify(e.answer.body, null, 2)}\n`);
    if (e instanceof CommandError) {
      io.err(`error: ${e.message}\n`);
      return e.exitCode;
    }
    if (e instanceof ConfigError) {
      io.err(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
}

main(process.argv.slice(2), processIo()).then(
  // Exit at once: idle keep-alive connections must not hold the process (stdout is synchronous
  // for files and pipes on POSIX, so nothing written is lost).
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
