import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from './helpers/db.js';
import { openDatabase } from '../src/db/index.js';
import { migrations } from '../src/db/migrations/index.js';
import { runCli, startCli } from './helpers/cli.js';
import { until } from './helpers/receiver.js';
import { ADMIN_TOKEN, admin, createGame, orderBody, signed, startService, type TestService } from './helpers/service.js';

// The operator CLI as a child process against a real service (SQLite or PostgreSQL per TEST_DB).
let t: TestService;
let env: Record<string, string>;
/** A local port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}
const newGameId = () => `cli_${randomBytes(5).toString('hex')}`;

beforeAll(async () => {
  t = await startService();
  env = { COMBO_URL: t.url, ADMIN_TOKEN };
});
afterAll(() => t?.stop());

describe('games', () => {
  it('games create --json prints the created game with its one-time secret', async () => {
    const id = newGameId();
    const r = await runCli(['games', 'create', id, '--name', 'CLI game', '--ttl', '900', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    const game = JSON.parse(r.stdout);
    expect(game).toMatchObject({ game_id: id, name: 'CLI game', order_ttl_seconds: 900, iap_enabled: true });
    expect(game.secret_key).toMatch(/^sk_/);
    expect(game.key_ids).toEqual([game.key_id]);
    const stored = await admin(t, 'GET', `/admin/v1/games/${id}`);
    expect(stored.body.order_ttl_seconds).toBe(900);
  });

  it('games create without --json prints a key/value table and warns that the secret is shown once', async () => {
    const id = newGameId();
    const r = await runCli(['games', 'create', id, '--name', 'Table game', '--url', t.url, '--token', ADMIN_TOKEN], {});
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^game_id\\s+${id}$`, 'm'));
    expect(r.stdout).toMatch(/^secret_key\s+sk_\S+$/m);
    expect(r.stdout).toMatch(/^created_at\s+\d{4}-\d\d-\d\dT/m);
    expect(r.stderr).toContain('shown only now');
  });

  it('games get and games update change and show the settings', async () => {
    const g = await createGame(t);
    const u = await runCli(['games', 'update', g.gameId, '--iap', 'false', '--rate', '50', '--gm-url', 'http://127.0.0.1:9/gm', '--json'], env);
    expect(u.code, u.stderr).toBe(0);
    expect(JSON.parse(u.stdout)).toMatchObject({ iap_enabled: false, rate_limit_per_second: 50, gm_url: 'http://127.0.0.1:9/gm' });
    const cleared = await runCli(['games', 'update', g.gameId, '--gm-url', 'none', '--json'], env);
    expect(JSON.parse(cleared.stdout).gm_url).toBeNull();
    const got = await runCli(['games', 'get', g.gameId], env);
    expect(got.code).toBe(0);
    expect(got.stdout).toMatch(/^iap_enabled\s+false$/m);
    expect(got.stdout).toMatch(/^gm_url\s+-$/m);
  });

  it('games list shows a page of games as a table, and the API answer with --json', async () => {
    const g = await createGame(t);
    await createGame(t);
    const all = await runCli(['games', 'list', '--limit', '200', '--json'], env);
    expect(all.code, all.stderr).toBe(0);
    const page = JSON.parse(all.stdout);
    expect(page.data.map((x: { game_id: string }) => x.game_id)).toContain(g.gameId);
    expect(page).toHaveProperty('next_cursor');
    const one = await runCli(['games', 'list', '--limit', '1'], env);
    expect(one.code).toBe(0);
    expect(one.stdout).toMatch(/^GAME_ID\s+NAME\s+IAP_ENABLED\s+SANDBOX_PAYMENTS\s+ORDER_TTL_SECONDS\s+KEY_IDS\s+CREATED_AT$/m);
    const next = /^next_cursor\s+(\S+)$/m.exec(one.stdout)?.[1];
    const second = await runCli(['games', 'list', '--limit', '1', '--cursor', next as string, '--json'], env);
    expect(JSON.parse(second.stdout).data[0].game_id > JSON.parse((await runCli(['games', 'list', '--limit', '1', '--json'], env)).stdout).data[0].game_id).toBe(true);
  });

  it('a bad flag value is a usage error (exit 2) and nothing is sent', async () => {
    const g = await createGame(t);
    const r = await runCli(['games', 'update', g.gameId, '--iap', 'maybe'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--iap must be true or false');
    const n = await runCli(['games', 'update', g.gameId, '--ttl', '60s'], env);
    expect(n.code).toBe(2);
    expect(n.stderr).toContain('--ttl must be an integer');
    const unknown = await runCli(['games', 'get', g.gameId, '--colour', 'red'], env);
    expect(unknown.code).toBe(2);
    const noName = await runCli(['games', 'create', newGameId()], env);
    expect(noName.code).toBe(2);
    expect(noName.stderr).toContain('--name is required');
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.iap_enabled).toBe(true);
  });

  it("the API's validation errors are shown with status and code (exit 1)", async () => {
    const g = await createGame(t);
    const r = await runCli(['games', 'update', g.gameId, '--ttl', '59'], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error: HTTP 400 invalid_request: .*order_ttl_seconds/);
  });
});

describe('keys', () => {
  it('keys create adds a second key, keys delete retires it', async () => {
    const g = await createGame(t);
    const c = await runCli(['keys', 'create', g.gameId, '--json'], env);
    expect(c.code, c.stderr).toBe(0);
    const key = JSON.parse(c.stdout);
    expect(key.secret_key).toMatch(/^sk_/);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.key_ids).toHaveLength(2);
    // The old key signs outgoing requests until the game signs one with the new key.
    const l = await runCli(['keys', 'list', g.gameId], env);
    expect(l.code, l.stderr).toBe(0);
    expect(l.stdout.split('\n').map((line) => line.split(/\s+/).join(' '))).toEqual(['KEY_ID SIGNS_OUTGOING', `${key.key_id} no`, `${g.keyId} yes`, '']);
    const lj = JSON.parse((await runCli(['keys', 'list', g.gameId, '--json'], env)).stdout);
    expect(lj.signing_key_id).toBe(g.keyId);
    const d = await runCli(['keys', 'delete', g.gameId, key.key_id], env);
    expect(d.code, d.stderr).toBe(0);
    expect(d.stdout).toBe(`deleted key ${key.key_id} of game ${g.gameId}\n`);
    expect((await admin(t, 'GET', `/admin/v1/games/${g.gameId}`)).body.key_ids).toEqual([g.keyId]);
  });

  it('deleting the last key answers 409, shown as an error', async () => {
    const g = await createGame(t);
    const d = await runCli(['keys', 'delete', g.gameId, g.keyId], env);
    expect(d.code).toBe(1);
    expect(d.stderr).toMatch(/HTTP 409 conflict/);
  });
});

describe('products', () => {
  it('products put, get and list (table with one row per product)', async () => {
    const g = await createGame(t); // has gem_60
    const p = await runCli(['products', 'put', g.gameId, 'gem_300', '--name', '300 gems', '--price', '3000', '--currency', 'CNY', '--json'], env);
    expect(p.code, p.stderr).toBe(0);
    expect(JSON.parse(p.stdout)).toMatchObject({ product_id: 'gem_300', price: 3000, currency: 'CNY', active: true });
    const off = await runCli(['products', 'put', g.gameId, 'old_pack', '--name', 'Old pack', '--price', '1', '--currency', 'USD', '--active', 'false'], env);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toMatch(/^active\s+false$/m);

    const list = await runCli(['products', 'list', g.gameId], env);
    expect(list.code, list.stderr).toBe(0);
    const lines = list.stdout.trimEnd().split('\n');
    expect(lines[0]?.split(/\s{2,}/)).toEqual(['PRODUCT_ID', 'NAME', 'PRICE', 'CURRENCY', 'ACTIVE', 'UPDATED_AT']);
    const rows = Object.fromEntries(lines.slice(1).map((l) => [l.split(/\s{2,}/)[0], l.split(/\s{2,}/)]));
    expect(Object.keys(rows).sort()).toEqual(['gem_300', 'gem_60', 'old_pack']);
    expect(rows.gem_300?.slice(1, 5)).toEqual(['300 gems', '3000', 'CNY', 'true']);
    expect(rows.old_pack?.slice(1, 5)).toEqual(['Old pack', '1', 'USD', 'false']);

    const get = await runCli(['products', 'get', g.gameId, 'gem_60', '--json'], env);
    expect(JSON.parse(get.stdout)).toMatchObject({ product_id: 'gem_60', price: 600 });
  });

  it('products put needs --name, --price and --currency (or them in --data)', async () => {
    const g = await createGame(t);
    const r = await runCli(['products', 'put', g.gameId, 'x', '--name', 'X', '--currency', 'CNY'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--price is required');
    const d = await runCli(['products', 'put', g.gameId, 'x', '--data', '{"name":"X","price":5,"currency":"EUR"}', '--json'], env);
    expect(d.code, d.stderr).toBe(0);
    expect(JSON.parse(d.stdout)).toMatchObject({ name: 'X', price: 5, currency: 'EUR' });
  });
});

describe('api', () => {
  it('api GET prints any admin answer', async () => {
    const g = await createGame(t);
    const r = await runCli(['api', 'GET', `/admin/v1/games/${g.gameId}/products`, '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).data.map((p: { product_id: string }) => p.product_id)).toEqual(['gem_60']);
    const table = await runCli(['api', 'get', `/admin/v1/games/${g.gameId}/products`], env);
    expect(table.stdout).toMatch(/^GAME_ID\s+PRODUCT_ID\s+NAME\s+PRICE/m);
  });

  it('api PATCH sends --data (inline or from stdin) and shows the answer', async () => {
    const g = await createGame(t);
    const r = await runCli(['api', 'PATCH', `/admin/v1/games/${g.gameId}`, '--data', '{"name":"Renamed"}', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).name).toBe('Renamed');
    const s = await runCli(['api', 'PATCH', `/admin/v1/games/${g.gameId}`, '--data', '-', '--json'], env, '{"sandbox_payments":false}');
    expect(JSON.parse(s.stdout).sandbox_payments).toBe(false);
    const bad = await runCli(['api', 'PATCH', `/admin/v1/games/${g.gameId}`, '--data', '{name'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--data is not valid JSON');
  });

  it('a non-2xx answer exits 1; with --json its ErrorResponse is printed for scripts', async () => {
    const r = await runCli(['api', 'GET', '/admin/v1/games/no_such_game', '--json'], env);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ error: 'not_found' });
    expect(r.stderr).toMatch(/HTTP 404 not_found/);
  });

  it('a wrong token is 401; no token is a usage error; an unreachable service is reported', async () => {
    const wrong = await runCli(['api', 'GET', '/admin/v1/games/x'], { COMBO_URL: t.url, ADMIN_TOKEN: 'wrong-token-0123456789' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/HTTP 401 unauthorized/);
    const none = await runCli(['api', 'GET', '/admin/v1/games/x'], { COMBO_URL: t.url });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--token (or ADMIN_TOKEN in the environment) is required');
    const port = await closedPort();
    const down = await runCli(['api', 'GET', '/admin/v1/games/x', '--url', `http://127.0.0.1:${port}`], { ADMIN_TOKEN });
    expect(down.code).toBe(1);
    expect(down.stderr).toContain(`cannot reach http://127.0.0.1:${port}: ECONNREFUSED`);
    expect(down.stderr + none.stderr + wrong.stderr).not.toContain(ADMIN_TOKEN);
  });

  it('an --operator the audit log cannot hold is refused (exit 2), not dropped or sent as a broken header', async () => {
    for (const name of ['x'.repeat(65), '李'.repeat(65), 'tab\there', 'bidi\u202eevil', ' bob', 'bob ', '   ', '\u200d']) {
      const r = await runCli(['games', 'list', '--operator', name], env);
      expect(r.code, name).toBe(2);
      expect(r.stderr).toContain('1 to 64 characters');
    }
  });

  it.each([['alice'], ['李雷'], ['José'], ["O'Brien (李) *"], ['x'.repeat(64)], ['ශ්\u200dරී'], ["UTF-8'en'Bob"], ["utf-8'x'%41lice"]])('--operator %s is sent as a header the service takes; the audit log records the authenticated caller (ADMIN_TOKEN)', async (name) => {
    const id = newGameId();
    const r = await runCli(['games', 'create', id, '--name', 'Audited', '--operator', name], env);
    expect(r.code, r.stderr).toBe(0);
    const rows = await t.service.database.db.selectFrom('audit_log').select(['actor']).where('target', 'like', `%${id}%`).execute();
    expect(rows.map((x) => x.actor)).toContain('ADMIN_TOKEN');
  });
});

describe('orders tail', () => {
  it('prints new orders as they are created and stops on Ctrl-C (or says the endpoint is missing)', async () => {
    const g = await createGame(t);
    const probe = await admin(t, 'GET', `/admin/v1/orders?game_id=${g.gameId}`);
    const tail = startCli(['orders', 'tail', '--game', g.gameId, '--interval', '0.2'], env);
    if (probe.status === 404) {
      // This service has no orders admin API yet (it comes with the orders admin branch).
      const r = await tail.exited;
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('has no GET /admin/v1/orders');
      return;
    }
    await tail.waitFor(/^CREATED_AT\s+ORDER_ID\s+STATUS/m);
    const created = await signed(t, g, 'POST', '/v1/server/create-order', orderBody());
    expect(created.status).toBe(200);
    await tail.waitFor(new RegExp(`${created.body.order_id}\\s+created`));
    tail.child.kill('SIGINT');
    const r = await tail.exited;
    expect(r.code).toBe(0);
    expect(r.stdout.match(new RegExp(created.body.order_id, 'g'))).toHaveLength(1);
  });

  it('orders tail keeps polling through a service that cannot be reached for a while', async () => {
    const g = await createGame(t);
    // A stand-in front door that can go away and come back on the same port.
    const target = new URL(t.url);
    const front = http.createServer((req, res) => {
      const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    const { port } = front.address() as AddressInfo;
    const tail = startCli(['orders', 'tail', '--game', g.gameId, '--interval', '0.1'], { ...env, COMBO_URL: `http://127.0.0.1:${port}` });
    let stderr = '';
    tail.child.stderr.on('data', (d) => (stderr += String(d)));
    try {
      // Polled once at least (the first poll's errors end the command: a wrong URL or token).
      const before = await signed(t, g, 'POST', '/v1/server/create-order', orderBody());
      await tail.waitFor(new RegExp(`${before.body.order_id}\\s+created`));
      front.closeAllConnections();
      await new Promise((r) => front.close(r));
      await until('a warning that the service cannot be reached', () => stderr.includes('while polling; retrying'));
      expect(stderr).toMatch(/warning: cannot reach http:\/\/127\.0\.0\.1:\d+: \S+ while polling; retrying/);
      await new Promise<void>((r) => front.listen(port, '127.0.0.1', r));
      const created = await signed(t, g, 'POST', '/v1/server/create-order', orderBody());
      await tail.waitFor(new RegExp(`${created.body.order_id}\\s+created`));
    } finally {
      tail.child.kill('SIGINT');
      await tail.exited;
      front.closeAllConnections();
      front.close();
    }
  });

  it('orders tail needs --game, of a game that exists', async () => {
    const r = await runCli(['orders', 'tail'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--game is required');
    const unknown = await runCli(['orders', 'tail', '--game', 'no_such_game'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no game "no_such_game"');
  });
});

describe('migrate and help', () => {
  it('migrate applies the migrations once', async () => {
    const db = await createTestDatabase();
    try {
      const first = await runCli(['migrate'], { DATABASE_URL: db.url, DATA_DIR: '/tmp' });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toMatch(/^applied: 0001_initial/);
      const again = await runCli(['migrate'], { DATABASE_URL: db.url, DATA_DIR: '/tmp' });
      expect(again.stdout).toBe('database is up to date\n');
    } finally {
      await db.drop();
    }
  });

  it('several processes migrating one database at once: each succeeds, one applies every migration', async () => {
    const db = await createTestDatabase();
    try {
      const runs = await Promise.all([1, 2, 3].map(() => runCli(['migrate'], { DATABASE_URL: db.url, DATA_DIR: '/tmp' })));
      for (const r of runs) expect(r.code, r.stderr).toBe(0);
      // One of them applies every migration while the others wait for it (PostgreSQL: the
      // migration lock, held for the whole run; SQLite: the run's IMMEDIATE transaction), then
      // find nothing pending.
      const applied = runs.filter((r) => r.stdout.startsWith('applied: '));
      expect(applied).toHaveLength(1);
      expect(applied[0]!.stdout.slice('applied: '.length).trim().split(', ').sort()).toEqual(Object.keys(migrations).sort());
      expect(runs.filter((r) => r.stdout === 'database is up to date\n')).toHaveLength(2);
      const check = openDatabase(db.url);
      try {
        const rows = await check.db.selectFrom('kysely_migration' as never).select('name' as never).execute();
        expect(rows).toHaveLength(Object.keys(migrations).length);
      } finally {
        await check.close();
      }
    } finally {
      await db.drop();
    }
  });

  it('help lists every command; an unknown command exits 2', async () => {
    const h = await runCli(['--help'], {});
    expect(h.code).toBe(0);
    for (const c of ['games', 'keys', 'products', 'api', 'orders', 'sign', 'notify', 'listen', 'migrate']) expect(h.stdout).toMatch(new RegExp(`^  ${c}\\s`, 'm'));
    const u = await runCli(['frobnicate'], {});
    expect(u.code).toBe(2);
  });
});
