import dns from 'node:dns';
import net from 'node:net';
import { Agent, request } from 'undici';

/**
 * Outbound HTTP to URLs callers gave us (notify_url, gm_url): untrusted. No redirects are
 * followed, connection and total time-outs apply, the answer is read up to a size cap, and in
 * production addresses that resolve to loopback, private, link-local or otherwise internal
 * ranges are refused (unless explicitly allowed), at connect time, after DNS resolution, so a
 * DNS answer cannot smuggle one in.
 */
export interface OutboundOptions {
  /** Refuse internal addresses (production default). */
  blockPrivate: boolean;
  connectTimeoutMs?: number;
  /** Max concurrent connections per origin. */
  perHostConnections?: number;
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The first `maxBytes` of the body. */
  body: Buffer;
  truncated: boolean;
}

export class OutboundBlockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OutboundBlockedError';
  }
}

export function isPrivateAddress(ip: string): boolean {
  if (net.isIPv4(ip)) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return (
      a === 0 || a === 10 || a === 127 || (a === 100 && b >= 64 && b <= 127) || (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168) || (a === 192 && b === 0) ||
      (a === 198 && (b === 18 || b === 19)) || a >= 224
    );
  }
  const v6 = ip.toLowerCase();
  if (v6 === '::' || v6 === '::1') return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(v6);
  if (mapped) return isPrivateAddress(mapped[1] as string);
  return /^(fc|fd|fe8|fe9|fea|feb|ff)/.test(v6);
}

export class OutboundClient {
  readonly agent: Agent;

  constructor(private readonly opts: OutboundOptions) {
    const block = opts.blockPrivate;
    this.agent = new Agent({
      connections: opts.perHostConnections ?? 16,
      connectTimeout: opts.connectTimeoutMs ?? 5000,
      connect: {
        lookup: (hostname, options, cb) => {
          dns.lookup(hostname, { ...options, all: false }, (err, address, family) => {
            if (!err && block && isPrivateAddress(address as string)) {
              cb(new OutboundBlockedError(`${hostname} resolves to an internal address (${String(address)})`), '', 4);
              return;
            }
            cb(err, address as string, family as number);
          });
        },
      },
    });
  }

  /** Refuses literal internal IPs up front (DNS names are checked at connect time). */
  checkUrl(url: string): void {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new OutboundBlockedError(`${u.protocol} URLs are not allowed`);
    const host = u.hostname.replace(/^\[|\]$/g, '');
    if (this.opts.blockPrivate && (net.isIP(host) ? isPrivateAddress(host) : host === 'localhost')) {
      throw new OutboundBlockedError(`${host} is an internal address`);
    }
  }

  /** POSTs a body; never follows redirects; reads at most `maxBytes` of the answer. */
  async post(
    url: string,
    body: string,
    headers: Record<string, string>,
    limits: { timeoutMs: number; maxBytes: number },
  ): Promise<OutboundResponse> {
    this.checkUrl(url);
    const signal = AbortSignal.timeout(limits.timeoutMs);
    const res = await request(url, {
      method: 'POST',
      body,
      headers,
      dispatcher: this.agent,
      signal,
      headersTimeout: limits.timeoutMs,
      bodyTimeout: limits.timeoutMs,
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    for await (const chunk of res.body) {
      const b = chunk as Buffer;
      if (size + b.length > limits.maxBytes) {
        chunks.push(b.subarray(0, limits.maxBytes - size));
        size = limits.maxBytes;
        truncated = true;
        res.body.destroy();
        break;
      }
      chunks.push(b);
      size += b.length;
    }
    return { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), truncated };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
