import { execFile } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTimestamp, parseAuthorization, sha256Hex, signatureMatches } from '../src/signing/signer.js';
import { runCli } from './helpers/cli.js';
import { createGame, orderBody, startService, type TestService } from './helpers/service.js';

// Integrator tools (sign, notify test) as a child process, against a real service and a real
// local HTTP receiver standing in for a game backend.
let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(() => t?.stop());

describe('sign', () => {
  it('prints an Authorization header the service accepts for exactly that request', async () => {
    const g = await createGame(t);
    const body = JSON.stringify(orderBody());
    const r = await runCli(['sign', '--game', g.gameId, '--secret', g.secret, '--method', 'POST', '--uri', '/v1/server/create-order', '--data', body]);
    expect(r.code, r.stderr).toBe(0);
    const authorization = r.stdout.trimEnd();
    expect(authorization).toMatch(new RegExp(`^SEAYOO-HMAC-SHA256 Game=${g.gameId},Timestamp=\\d{8}T\\d{6}Z,Signature=[0-9a-f]{64}$`));
    const ok = await fetch(`${t.url}/v1/server/create-order`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body });
    expect(ok.status).toBe(200);
    expect((await ok.json()).order_id).toMatch(/^\d+$/);
    // The signature covers the body: one changed byte is refused.
    const tampered = await fetch(`${t.url}/v1/server/create-order`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: body.replace('ios', 'android') });
    expect(tampered.status).toBe(401);
  });

  it('--curl prints a curl command that works as printed (shell quoting included)', async () => {
    const g = await createGame(t);
    const body = JSON.stringify(orderBody({ context: "it's a \"quoted\" $HOME `x` context" }));
    const r = await runCli(['sign', '--game', g.gameId, '--secret', g.secret, '--uri', '/v1/server/create-order', '--data', body, '--curl', t.url]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^curl -sS -X POST '/);
    const { stdout } = await promisify(execFile)('sh', ['-c', r.stdout.trimEnd()]);
    expect(JSON.parse(stdout)).toMatchObject({ order_id: expect.stringMatching(/^\d+$/) });
  });

  it('signs GET requests with a query string (the URI as sent), and partner requests', async () => {
    const r = await runCli(['sign', '--partner', 'p1', '--secret', 'sk_partner_secret_0123456789', '--curl', `${t.url}/v1/query-binding?game_id=a&partner_user_id=b`, '--json'], {});
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ method: 'GET', uri: '/v1/query-binding?game_id=a&partner_user_id=b', body_sha256: sha256Hex('') });
    expect(out.authorization).toMatch(/^SEAYOO-HMAC-SHA256 Partner=p1,/);
    expect(out.string_to_sign).toBe(`SEAYOO-HMAC-SHA256\nGET\n/v1/query-binding?game_id=a&partner_user_id=b\n${out.timestamp}\n${sha256Hex('')}`);
    expect(out.curl).not.toContain('--data-raw');
  });

  it('--timestamp reproduces the published SDK test vector', async () => {
    // vectors/signing.json, case "create-order"
    const body =
      '{"reference_id":"ref-00000001","combo_id":"1234567890","product_id":"gem_60","platform":"ios","notify_url":"https://game.example.com/notify","quantity":1}';
    const r = await runCli(
      ['sign', '--game', 'demo', '--uri', '/v1/server/create-order', '--data', body, '--timestamp', '20261122T093000Z'],
      { COMBO_SECRET_KEY: 'sk_test_vector_secret_0123456789' },
    );
    expect(r.stdout).toBe(
      'SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=29972c54d3b4662dc3ad24332f23a768a467c26e03bdb55681dac0dfdebf25e6\n',
    );
  });

  it('usage errors: neither or both of --game/--partner, no secret, bad timestamp', async () => {
    const cases: Array<[string[], string]> = [
      [['sign', '--secret', 'sk_x', '--uri', '/x'], 'exactly one of --game or --partner'],
      [['sign', '--game', 'g', '--partner', 'p', '--secret', 'sk_x', '--uri', '/x'], 'exactly one of --game or --partner'],
      [['sign', '--game', 'g', '--uri', '/x'], '--secret (or env COMBO_SECRET_KEY) is required'],
      [['sign', '--game', 'g', '--secret', 'sk_x', '--uri', '/x', '--timestamp', '20261322T093000Z'], '--timestamp must be YYYYMMDDTHHMMSSZ'],
      [['sign', '--game', 'g', '--secret', 'sk_x'], '--uri is required'],
      [['sign', '--game', 'g', '--secret', 'sk_x', '--uri', 'v1/server/enter-game'], '--uri must start with /'],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, {});
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
    }
  });
});

/** A game's notify endpoint: verifies the signature the way the Combo SDKs do. */
interface Receiver {
  url: string;
  received: Array<{ url: string; authorization: string; body: string; verified: boolean; fresh: boolean }>;
  close(): Promise<void>;
}

async function startReceiver(secret: string, gameId: string, answer: { status: number; body: string }): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const read = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  const server: Server = createServer(async (req, res) => {
    const raw = await read(req);
    const authorization = String(req.headers.authorization ?? '');
    const parsed = parseAuthorization(authorization);
    const verified =
      typeof parsed !== 'string' &&
      parsed.principal.kind === 'game' &&
      parsed.principal.id === gameId &&
      req.headers['content-type'] === 'application/json' &&
      signatureMatches([secret], parsed.signature, req.method as string, req.url as string, parsed.timestamp, sha256Hex(raw));
    const fresh = typeof parsed !== 'string' && checkTimestamp(parsed.timestamp, Date.now()) === null;
    received.push({ url: req.url as string, authorization, body: raw.toString('utf8'), verified, fresh });
    res.writeHead(verified ? answer.status : 401, { 'content-type': 'application/json' });
    res.end(verified ? answer.body : '{"error":"invalid_signature"}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/combo/notify?shard=1`, received, close: () => new Promise((r) => server.close(() => r())) };
}

describe('notify test', () => {
  const game = { id: 'notify_game', secret: 'sk_notify_test_secret_0123456789' };

  it('sends a signed ship_order notification (PROTOCOL 5 body) and shows the receiver answer', async () => {
    const rx = await startReceiver(game.secret, game.id, { status: 200, body: '{"ok":true}' });
    try {
      const r = await runCli(['notify', 'test', '--game', game.id, '--secret', game.secret, '--url', rx.url, '--product', 'gem_60', '--amount', '600']);
      expect(r.code, r.stderr).toBe(0);
      expect(rx.received).toHaveLength(1);
      const got = rx.received[0]!;
      expect(got).toMatchObject({ url: '/combo/notify?shard=1', verified: true, fresh: true });
      const body = JSON.parse(got.body);
      expect(body).toEqual({
        version: '1.0',
        notification_id: expect.stringMatching(/^ntf_/),
        notification_type: 'ship_order',
        data: {
          order_id: expect.stringMatching(/^\d+$/),
          reference_id: expect.any(String),
          combo_id: expect.any(String),
          product_id: 'gem_60',
          quantity: 1,
          currency: 'CNY',
          amount: 600,
          is_sandbox: true,
        },
      });
      expect(r.stdout).toContain(got.body);
      expect(r.stdout).toMatch(/^status\s+200$/m);
      expect(r.stdout).toMatch(/^response_body\s+\{"ok":true\}$/m);
    } finally {
      await rx.close();
    }
  });

  it('sends | and ^ in the URL path escaped and signed so, as the dispatcher does', async () => {
    const rx = await startReceiver(game.secret, game.id, { status: 200, body: '' });
    try {
      const r = await runCli(['notify', 'test', '--game', game.id, '--secret', game.secret, '--url', rx.url.replace('/combo/notify', '/combo/a|b^c')]);
      expect(r.code, r.stderr).toBe(0);
      expect(rx.received[0]).toMatchObject({ url: '/combo/a%7Cb%5Ec?shard=1', verified: true });
    } finally {
      await rx.close();
    }
  });

  it('refund notifications carry no is_sandbox; --json gives the result for scripts', async () => {
    const rx = await startReceiver(game.secret, game.id, { status: 204, body: '' });
    try {
      const r = await runCli(['notify', 'test', '--game', game.id, '--url', rx.url, '--type', 'refund', '--context', 'ctx-1', '--json'], { COMBO_SECRET_KEY: game.secret });
      expect(r.code, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout);
      expect(out).toMatchObject({ status: 204, delivered: true, response_body: '' });
      expect(out.request_body.notification_type).toBe('refund');
      expect(out.request_body.data.context).toBe('ctx-1');
      expect(out.request_body.data).not.toHaveProperty('is_sandbox');
      expect(JSON.parse(rx.received[0]!.body)).toEqual(out.request_body);
    } finally {
      await rx.close();
    }
  });

  it('a 410 is shown as the end of retries (status gone), exit 1', async () => {
    const rx = await startReceiver(game.secret, game.id, { status: 410, body: '{}' });
    try {
      const r = await runCli(['notify', 'test', '--game', game.id, '--secret', game.secret, '--url', rx.url]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^delivered\s+no: 410 Gone, the service would stop retrying/m);
    } finally {
      await rx.close();
    }
  });

  it('a receiver that refuses (wrong key here) is shown with its status and body, exit 1', async () => {
    const rx = await startReceiver('sk_a_different_secret_0123456789', game.id, { status: 200, body: '{}' });
    try {
      const r = await runCli(['notify', 'test', '--game', game.id, '--secret', game.secret, '--url', rx.url]);
      expect(r.code).toBe(1);
      expect(r.stdout).toMatch(/^status\s+401$/m);
      expect(r.stdout).toMatch(/^delivered\s+no/m);
      expect(r.stdout).toContain('{"error":"invalid_signature"}');
    } finally {
      await rx.close();
    }
  });

  it('an unreachable receiver and bad arguments are reported', async () => {
    const rx = await startReceiver(game.secret, game.id, { status: 200, body: '{}' });
    await rx.close();
    const down = await runCli(['notify', 'test', '--game', game.id, '--secret', game.secret, '--url', rx.url]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/POST http:\/\/127\.0\.0\.1:\d+\/combo\/notify\?shard=1 failed: ECONNREFUSED/);
    // A receiver that takes the connection and never answers: the time-out, in words.
    const silent = net.createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/n`;
      const hung = await runCli(['notify', 'test', '--game', game.id, '--secret', game.secret, '--url', url, '--timeout', '1']);
      expect(hung.code).toBe(1);
      expect(hung.stderr).toContain(`POST ${url} failed: timed out after 1000 ms`);
    } finally {
      silent.close();
    }
    const badType = await runCli(['notify', 'test', '--game', game.id, '--secret', game.secret, '--url', rx.url, '--type', 'paid']);
    expect(badType.code).toBe(2);
    expect(badType.stderr).toContain('--type must be ship_order or refund');
  });
});
