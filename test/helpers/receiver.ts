import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A game's notify endpoint, for tests: a real HTTP server on 127.0.0.1 that verifies every
 * request's SEAYOO-HMAC-SHA256 signature (PROTOCOL 1, implemented here independently of the
 * service's signer), records what it got, and answers what the test scripted.
 */
export type Behaviour =
  | { kind: 'status'; status: number; body?: string; delayMs?: number }
  | { kind: 'hang' }
  /** Sends the status line, headers and `body`, then never ends the answer. */
  | { kind: 'stall'; status: number; body?: string }
  | { kind: 'reset' }
  | { kind: 'redirect'; location: string };

export const ok = (body = '{"ok":true}'): Behaviour => ({ kind: 'status', status: 200, body });
export const status = (s: number, body = ''): Behaviour => ({ kind: 'status', status: s, body });

export interface Received {
  path: string;
  /** Request target as received (path + raw query). */
  url: string;
  at: number;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
  /** null when the signature verified, else why not. */
  signatureProblem: string | null;
  answered: string;
}

export interface ReceiverOptions {
  /** Keys per game id (all accepted, as during rotation). */
  keys: Map<string, string[]>;
  /** The clock the timestamp is checked against (the service's). */
  now: () => number;
}

export class Receiver {
  readonly received: Received[] = [];
  /** Per path: decides the answer from this request and how many came before on the path. */
  private readonly scripts = new Map<string, (r: Received, n: number) => Behaviour>();
  private readonly counts = new Map<string, number>();
  private inflight = 0;
  maxInflight = 0;
  /** Waiting for the next request on a path (see arrival). */
  private readonly waiters: Array<{ path: string; resolve: (r: Received) => void }> = [];
  private server!: http.Server;
  url = '';

  constructor(private readonly opts: ReceiverOptions) {}

  async start(host = '127.0.0.1'): Promise<this> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, host, resolve));
    this.url = `http://${host}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Answers on `path` by script (default 200). */
  script(path: string, fn: (r: Received, n: number) => Behaviour): void {
    this.scripts.set(path, fn);
  }

  /** Answers the given behaviours in order on `path`, then 200. */
  sequence(path: string, ...seq: Behaviour[]): void {
    this.script(path, (_r, n) => seq[n] ?? ok());
  }

  /**
   * The next request on `path` not promised to an earlier call (a signal to wait on instead of
   * polling): two calls wait for two requests.
   */
  arrival(path: string): Promise<Received> {
    return new Promise((resolve) => this.waiters.push({ path, resolve }));
  }

  on(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const url = req.url ?? '/';
      const path = url.split('?')[0] as string;
      let body: unknown = null;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        /* recorded as null */
      }
      const rec: Received = {
        path,
        url,
        at: Date.now(),
        headers: req.headers,
        raw: raw.toString('utf8'),
        body,
        signatureProblem: this.verify(req, url, raw),
        answered: '',
      };
      this.received.push(rec);
      const waiter = this.waiters.findIndex((x) => x.path === path);
      if (waiter >= 0) this.waiters.splice(waiter, 1)[0]?.resolve(rec);
      const n = this.counts.get(path) ?? 0;
      this.counts.set(path, n + 1);
      const b: Behaviour = rec.signatureProblem ? status(401, rec.signatureProblem) : (this.scripts.get(path)?.(rec, n) ?? ok());
      rec.answered = b.kind === 'status' ? String(b.status) : b.kind;
      this.answer(b, req, res);
    });
  }

  private answer(b: Behaviour, req: http.IncomingMessage, res: http.ServerResponse): void {
    if (b.kind === 'hang') return; // never answers; closeAllConnections ends it
    if (b.kind === 'stall') {
      // A chunked answer that never ends: the client has the status but never the whole body.
      res.writeHead(b.status, { 'content-type': 'application/json' });
      res.write(b.body ?? ' ');
      return;
    }
    if (b.kind === 'reset') {
      req.socket.destroy();
      return;
    }
    if (b.kind === 'redirect') {
      res.writeHead(302, { location: b.location }).end();
      return;
    }
    this.inflight++;
    this.maxInflight = Math.max(this.maxInflight, this.inflight);
    const send = () => {
      this.inflight--;
      res.writeHead(b.status, { 'content-type': 'application/json' }).end(b.body ?? '');
    };
    if (b.delayMs) setTimeout(send, b.delayMs);
    else send();
  }

  /** PROTOCOL 1, verified the way a receiving SDK does. */
  private verify(req: http.IncomingMessage, uri: string, raw: Buffer): string | null {
    if (req.method !== 'POST') return `method ${req.method}`;
    if (req.headers['content-type'] !== 'application/json') return `content-type ${req.headers['content-type']}`;
    const auth = req.headers.authorization ?? '';
    const m = /^SEAYOO-HMAC-SHA256 (.*)$/.exec(auth);
    if (!m) return 'scheme';
    const params = new Map<string, string>();
    for (const part of (m[1] as string).split(',')) {
      const [k, ...v] = part.split('=');
      params.set((k ?? '').trim(), v.join('=').trim().replace(/^"(.*)"$/, '$1'));
    }
    const game = params.get('Game');
    const ts = params.get('Timestamp') ?? '';
    const sig = params.get('Signature') ?? '';
    if (!game || params.has('Partner')) return 'caller';
    const keys = this.opts.keys.get(game);
    if (!keys) return `unknown game ${game}`;
    const tm = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(ts);
    if (!tm) return 'timestamp format';
    const [y, mo, d, h, mi, s] = tm.slice(1).map(Number) as number[];
    const tsMs = Date.UTC(y!, mo! - 1, d!, h!, mi!, s!);
    if (Math.abs(this.opts.now() - tsMs) > 300_000) return 'timestamp skew';
    const sts = ['SEAYOO-HMAC-SHA256', 'POST', uri, ts, createHash('sha256').update(raw).digest('hex')].join('\n');
    const given = Buffer.from(sig, 'hex');
    for (const k of keys) {
      const expected = createHmac('sha256', k).update(sts).digest();
      if (expected.length === given.length && timingSafeEqual(expected, given)) return null;
    }
    return 'signature mismatch';
  }
}

/** Polls `fn` until it returns a truthy value, or fails after `timeoutMs`. */
export async function until<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
