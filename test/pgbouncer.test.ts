/**
 * The service behind PgBouncer in transaction pooling mode (docs/deployment.md, "Sizing"): it
 * must connect, migrate at start and serve. PgBouncer refuses a connection whose startup packet
 * carries parameters it does not know (`statement_timeout`, ...), so the service's
 * DATABASE_STATEMENT_TIMEOUT_MS is applied with SET after connecting, never as a startup
 * parameter: this file fails if that changes.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_DB, type TestDatabase } from './helpers/db.js';
import { createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';

const PGBOUNCER = process.env.PGBOUNCER_PATH ?? (spawnSync('sh', ['-c', 'command -v pgbouncer || ls /usr/sbin/pgbouncer']).stdout?.toString().trim().split('\n')[0] || 'pgbouncer');
const havePgbouncer = TEST_DB === 'postgres' && spawnSync(PGBOUNCER, ['--version']).status === 0;
if (TEST_DB === 'postgres' && !havePgbouncer && process.env.CI) throw new Error(`PgBouncer is required in CI for the PostgreSQL suite (no ${PGBOUNCER})`);
if (TEST_DB === 'postgres' && !havePgbouncer) console.warn(`*** PgBouncer tests SKIPPED: no ${PGBOUNCER} (apt-get install pgbouncer) ***`);

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${log()}`);
    const up = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!havePgbouncer)('behind PgBouncer (pool_mode = transaction)', () => {
  let dir: string;
  let bouncer: ChildProcess;
  let db: TestDatabase;
  let t: TestService;
  let stderr = '';

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = mkdtempSync(path.join(os.tmpdir(), 'combo-pgbouncer-'));
    const port = await freePort();
    const upstream = new URL(db.url);
    writeFileSync(path.join(dir, 'users.txt'), `"${upstream.username || 'postgres'}" ""\n`);
    writeFileSync(
      path.join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${path.join(dir, 'users.txt')}`,
        'pool_mode = transaction',
        'default_pool_size = 4',
        '',
      ].join('\n'),
    );
    // PgBouncer will not run as root: as root, it switches to the postgres user.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      const ids = spawnSync('id', ['-u', 'postgres']).stdout.toString().trim();
      const gids = spawnSync('id', ['-g', 'postgres']).stdout.toString().trim();
      for (const f of ['', 'users.txt', 'pgbouncer.ini']) chownSync(path.join(dir, f), Number(ids), Number(gids));
    }
    bouncer = spawn(PGBOUNCER, [...(asRoot ? ['-u', 'postgres'] : []), path.join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'] });
    bouncer.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    await listening(port, bouncer, () => stderr);
    const via = new URL(db.url);
    via.port = String(port);
    // The default DATABASE_STATEMENT_TIMEOUT_MS (30 s) is in force.
    t = await startService({ db: { url: via.toString(), drop: async () => {} } });
  });
  afterAll(async () => {
    await t?.stop();
    bouncer?.kill('SIGTERM');
    if (bouncer && bouncer.exitCode === null) await new Promise((resolve) => bouncer.once('exit', resolve));
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('connects, migrates at start and serves create-order and enter-game, with the statement time-out on', async () => {
    expect(t.service.database.sessionTimeouts).toContain('statement_timeout = 30000');
    expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
    const game = await createGame(t);
    const order = await signed(t, game, 'POST', '/v1/server/create-order', orderBody());
    expect(order.status).toBe(200);
    const enter = await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'p1', session_id: 's-pgbouncer' });
    expect(enter.status).toBe(200);
    expect(stderr).not.toContain('unsupported startup parameter');
  });
});
