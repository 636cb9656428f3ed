import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizationHeader } from '../src/signing/signer.js';
import { runCli, startCli } from './helpers/cli.js';
import { freePort } from './helpers/ports.js';
import { createOrder, pay, statusOf, until } from './helpers/orders.js';
import { createGame, startService, type TestService } from './helpers/service.js';

// `listen`, the integrator's local notification receiver, as a child process: notifications
// from a real service, and requests signed with the wrong key, for another game or not at all.
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t?.stop());

/** Starts `listen` on a free port and waits until it accepts connections. */
async function startListener(args: string[], env: Record<string, string> = {}) {
  const port = await freePort();
  const cli = startCli(['listen', '--port', String(port), ...args], env);
  await until(
    () =>
      new Promise((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => (s.destroy(), resolve(true)));
        s.on('error', () => resolve(false));
      }),
    20_000,
    'the listener',
  );
  return { cli, url: `http://127.0.0.1:${port}` };
}

describe('listen', () => {
  it('receives a paid order\'s notification from the service, verifies it, answers 200 (the order is delivered), exits after --count', async () => {
    const game = await createGame(t, { sandbox_payments: true });
    const { cli, url } = await startListener(['--count', '1', '--game', game.gameId], { COMBO_SECRET_KEY: game.secret });
    try {
      const order = await createOrder(t, game, { notify_url: `${url}/combo/notify` });
      expect((await pay(t, order.order_token)).status).toBe(200);
      const r = await cli.exited;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^\\S+Z POST /combo/notify ship_order ntf_\\S+ order ${order.order_id}: signature verified \\(game ${game.gameId}\\), answered 200$`, 'm'));
      expect(r.stdout).toContain(`"order_id":"${order.order_id}"`);
      expect(r.stderr).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\/ for notifications of game \S+; exits after 1 verified$/m);
      await until(async () => (await statusOf(t, order.order_id)) === 'delivered', 10_000, 'the order delivered');
    } finally {
      cli.child.kill('SIGKILL');
    }
  });

  it('refuses (401, with the reason) a wrong key, another game, a stale timestamp and an unsigned request, and keeps listening; a GET is answered, not printed', async () => {
    const secret = 'sk_listen_test_secret_0123456789';
    const { cli, url } = await startListener(['--secret', secret, '--game', 'g1', '--json']);
    try {
      const body = '{"version":"1.0","notification_id":"ntf_1","notification_type":"ship_order","data":{"order_id":"1"}}';
      const send = async (authorization: string | undefined) => {
        const res = await fetch(`${url}/n?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body });
        return { status: res.status, body: await res.json() };
      };
      const game = { kind: 'game' as const, id: 'g1' };
      const up = await fetch(`${url}/`);
      expect([up.status, await up.text()]).toEqual([200, 'combo-platform listen: POST notifications here\n']);
      expect(await send(authorizationHeader(game, secret, 'POST', '/n?x=1', body))).toEqual({ status: 200, body: { ok: true } });
      const cases: Array<[string | undefined, string]> = [
        [authorizationHeader(game, 'sk_another_secret_0123456789', 'POST', '/n?x=1', body), 'the signature does not match (another key, or the request was changed)'],
        [authorizationHeader(game, secret, 'POST', '/n', body), 'the signature does not match (another key, or the request was changed)'],
        [authorizationHeader({ kind: 'game', id: 'g2' }, secret, 'POST', '/n?x=1', body), 'signed for game "g2", not "g1"'],
        [authorizationHeader({ kind: 'partner', id: 'g1' }, secret, 'POST', '/n?x=1', body), 'signed by a partner, not a game'],
        [authorizationHeader(game, secret, 'POST', '/n?x=1', body, Date.now() - 301_000), 'Authorization Timestamp is more than 300 s from the server clock'],
        [undefined, 'missing Authorization header'],
      ];
      for (const [authorization, problem] of cases) expect(await send(authorization)).toEqual({ status: 401, body: { error: 'invalid_signature', message: problem } });
      await cli.waitFor(/(.*\n){7}/);
      const lines = cli.stdout().trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines[0]).toMatchObject({ method: 'POST', url: '/n?x=1', verified: true, problem: null, game_id: 'g1', body: JSON.parse(body) });
      expect(lines.slice(1).map((l) => [l.verified, l.problem])).toEqual(cases.map(([, p]) => [false, p]));
      expect(cli.child.exitCode).toBeNull();
    } finally {
      cli.child.kill('SIGKILL');
    }
  });

  it('usage errors: no secret, a bad port or count (exit 2); a port in use (exit 1)', async () => {
    const cases: Array<[string[], string]> = [
      [['listen'], '--secret (or env COMBO_SECRET_KEY) is required'],
      [['listen', '--secret', 's', '--port', '70000'], '--port must be from 0 to 65535 (got 70000)'],
      [['listen', '--secret', 's', '--count', '0'], '--count must be at least 1 (got 0)'],
      [['listen', '--secret', 's', 'extra'], 'unexpected argument "extra"'],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, {});
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
    }
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    try {
      const r = await runCli(['listen', '--secret', 's', '--port', String((taken.address() as AddressInfo).port)], {});
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/cannot listen on 127\.0\.0\.1:\d+: EADDRINUSE/);
    } finally {
      taken.close();
    }
  });
});
