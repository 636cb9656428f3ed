import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { checkTimestamp, parseAuthorization, sha256Hex, signatureMatches } from '../signing/signer.js';
import { CommandError, int, parse, str, UsageError, type Command, type Io } from './io.js';
import { secretOf } from './sign.js';

/** A notification body is a few hundred bytes; anything this large is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

export interface Verdict {
  /** null when the request carries a valid signature of the game, else why not. */
  problem: string | null;
  gameId: string | null;
}

/**
 * Checks a received request's SEAYOO-HMAC-SHA256 signature (PROTOCOL 1) as a game backend
 * must: the caller is a game (the one expected, when given), the timestamp is within 300 s of
 * this clock, and the signature covers the method, the request target as received and the body.
 */
export function verifyNotification(req: { method: string; url: string; authorization: string | undefined }, body: Buffer, secret: string, gameId: string | undefined, nowMs: number): Verdict {
  const parsed = parseAuthorization(req.authorization);
  if (typeof parsed === 'string') return { problem: parsed, gameId: null };
  const id = parsed.principal.id;
  if (parsed.principal.kind !== 'game') return { problem: 'signed by a partner, not a game', gameId: null };
  if (gameId !== undefined && id !== gameId) return { problem: `signed for game "${id}", not "${gameId}"`, gameId: id };
  const late = checkTimestamp(parsed.timestamp, nowMs);
  if (late) return { problem: late, gameId: id };
  if (!signatureMatches([secret], parsed.signature, req.method, req.url, parsed.timestamp, sha256Hex(body))) {
    return { problem: 'the signature does not match (another key, or the request was changed)', gameId: id };
  }
  return { problem: null, gameId: id };
}

function readBody(req: http.IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => resolve(size <= MAX_BODY_BYTES ? Buffer.concat(chunks) : null));
    req.on('error', reject);
  });
}

/** One line a person reads per notification, then its body. */
function describe(method: string, url: string, body: Buffer, v: Verdict): string {
  let summary = '';
  try {
    const n = JSON.parse(body.toString('utf8')) as { notification_type?: string; notification_id?: string; data?: { order_id?: string } };
    summary = ` ${n.notification_type ?? '?'} ${n.notification_id ?? '?'} order ${n.data?.order_id ?? '?'}`;
  } catch {
    summary = ' (the body is not JSON)';
  }
  const verdict = v.problem === null ? `signature verified (game ${v.gameId}), answered 200` : `signature refused: ${v.problem}; answered 401`;
  return `${new Date().toISOString()} ${method} ${url}${summary}: ${verdict}\n${body.toString('utf8')}\n`;
}

/**
 * `listen`: a local notification receiver for a game being integrated, like `stripe listen`.
 * Each request is verified with the game's secret key; a verified one is printed and answered
 * 200 (the service marks the notification delivered), any other is printed with the reason and
 * answered 401 (the service retries it).
 */
async function listen(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, {
    port: { type: 'string' },
    host: { type: 'string' },
    secret: { type: 'string' },
    game: { type: 'string' },
    count: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const secret = secretOf(values, io);
  const port = int(values, 'port') ?? 9000;
  if (port < 0 || port > 65535) throw new UsageError(`--port must be from 0 to 65535 (got ${port})`);
  const count = int(values, 'count');
  if (count !== undefined && count < 1) throw new UsageError(`--count must be at least 1 (got ${count})`);
  const host = str(values, 'host') ?? '127.0.0.1';
  const gameId = str(values, 'game');
  const json = values.json === true;

  let verified = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  const server = http.createServer((req, res) => {
    // Notifications are POSTs. A GET (a browser, or a script waiting for the receiver to be
    // up) is told what this is, and not printed.
    if (req.method === 'GET' || req.method === 'HEAD') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('combo-platform listen: POST notifications here\n');
      return;
    }
    readBody(req).then(
      (body) => {
        const method = req.method ?? 'GET';
        const url = req.url ?? '/';
        const v: Verdict = body === null ? { problem: `the body is over ${MAX_BODY_BYTES} bytes`, gameId: null } : verifyNotification({ method, url, authorization: req.headers.authorization }, body, secret, gameId, Date.now());
        const ok = v.problem === null;
        res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' });
        res.end(ok ? '{"ok":true}' : JSON.stringify({ error: 'invalid_signature', message: v.problem }));
        const text = (body ?? Buffer.alloc(0)).toString('utf8');
        if (json) io.out(`${JSON.stringify({ at: Date.now(), method, url, verified: ok, problem: v.problem, game_id: v.gameId, body: ok ? JSON.parse(text) : text })}\n`);
        else io.out(describe(method, url, body ?? Buffer.alloc(0), v));
        if (ok && count !== undefined && ++verified >= count) done();
      },
      () => res.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new CommandError(`cannot listen on ${host}:${port}: ${e.code ?? e.message}`)));
    server.listen(port, host, resolve);
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  io.err(`listening on http://${shown}:${address.port}/ for notifications${gameId ? ` of game ${gameId}` : ''}${count ? `; exits after ${count} verified` : '; Ctrl-C stops'}\n`);
  await Promise.race([finished, io.interrupted()]);
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return 0;
}

export const listenCommand: Command = {
  name: 'listen',
  summary: 'receive notifications locally: verify their signatures, print them, answer 200',
  help: `usage:
  combo-platform listen [--port 9000] [--host 127.0.0.1] --secret SK [--game G] [--count N] [--json]

  A notification receiver for a game being integrated (use http://HOST:PORT/<any path> as the
  order's notify_url). Every request is verified with the game's secret key (PROTOCOL 1:
  signature, timestamp within 300 s) and printed; a verified one is answered 200, which
  acknowledges it, any other 401 with the reason, and the service retries it. A GET is
  answered 200 (the receiver is up) and not printed.
  --secret SK   the game's secret key (env COMBO_SECRET_KEY keeps it out of argv)
  --game G      accept only notifications signed for game G
  --count N     exit 0 after N verified notifications (default: run until Ctrl-C)
  --json        one JSON object per request: {at, method, url, verified, problem, game_id, body}`,
  run: listen,
};
