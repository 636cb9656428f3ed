import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { Agent, request } from 'undici';
import { Errors } from '../errors.js';

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

/**
 * Whether an address is anything but public unicast: loopback, private, link-local, CGNAT,
 * multicast, reserved, unique-local... (ipaddr.js's ranges). IPv6 forms that carry an IPv4
 * address are judged by it: mapped (`::ffff:7f00:1`, which the URL parser makes of
 * `[::ffff:127.0.0.1]`), NAT64 (`64:ff9b::/96`, what DNS64 answers for IPv4-only hosts) and
 * 6to4 (`2002::/16`); the deprecated IPv4-compatible `::a.b.c.d` and Teredo are refused.
 * Anything that is not a plain IPv4 or IPv6 address counts as internal.
 */
export function isPrivateAddress(ip: string): boolean {
  // net.isIP, not ipaddr.isValid: that also takes inet_aton's forms (`1.2.3`, `0x7f.1`).
  if (net.isIP(ip) === 0) return true;
  const addr = ipaddr.parse(ip);
  if (addr.kind() === 'ipv4') return addr.range() !== 'unicast';
  const v6 = addr as ipaddr.IPv6;
  const p = v6.parts;
  switch (v6.range()) {
    case 'ipv4Mapped':
      return isPrivateAddress(v6.toIPv4Address().toString());
    case 'rfc6052':
      return isPrivateAddress(embeddedIPv4(p[6] as number, p[7] as number));
    case '6to4':
      return isPrivateAddress(embeddedIPv4(p[1] as number, p[2] as number));
    case 'unicast':
      // ::a.b.c.d (IPv4-compatible, deprecated): the first 96 bits are zero.
      return p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0;
    default:
      return true;
  }
}

/**
 * The host of `url` when the URL alone shows it internal: a literal IP address that is not
 * public unicast, or a `localhost` name (RFC 6761: always loopback). Null for any other name,
 * which only DNS can judge (at connect time), and for a string that is not a URL. The WHATWG
 * parser has already made `0x7f.1` or `2130706433` into `127.0.0.1`.
 */
export function internalHostOf(url: string | URL): string | null {
  let hostname: string;
  try {
    hostname = (typeof url === 'string' ? new URL(url) : url).hostname;
  } catch {
    return null;
  }
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  if (net.isIP(host)) return isPrivateAddress(host) ? host : null;
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost') ? host : null;
}

/**
 * 400 invalid_request naming `field` when its URL's host is a literal internal address. For
 * URLs a caller gives that production would refuse at every attempt anyway.
 */
export function refuseInternalUrl(field: string, url: string): void {
  const host = internalHostOf(url);
  if (host) throw Errors.invalidRequest(`${field} points to an internal address (${host}), which this service does not call in production`);
}

const embeddedIPv4 = (high: number, low: number): string => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

type LookupCallback = (err: Error | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * DNS for outbound connections: every address the name resolves to is looked up, internal ones
 * are dropped when `block` is set (an error when none is left), and the answer takes the form
 * the caller asked for. Node's connect asks for `all: true` when it races address families
 * (happy eyeballs, on by default since Node 20) and then needs the list back.
 */
function lookupPublic(hostname: string, options: dns.LookupOptions, cb: LookupCallback, block: boolean): void {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return cb(err, options.all ? [] : '', 4);
    const usable = block ? addresses.filter((a) => !isPrivateAddress(a.address)) : addresses;
    const first = usable[0];
    if (!first) return cb(new OutboundBlockedError(`${hostname} resolves to an internal address (${addresses.map((a) => a.address).join(', ')})`), options.all ? [] : '', 4);
    if (options.all) cb(null, usable);
    else cb(null, first.address, first.family);
  });
}

/**
 * The first `maxBytes` of an answer's body; the rest is never read (the stream is destroyed,
 * which closes the connection), so a peer cannot make us buffer more than that.
 */
export async function readUpTo(body: AsyncIterable<unknown> & { destroy(): unknown }, maxBytes: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const b = chunk as Buffer;
    if (size + b.length > maxBytes) {
      chunks.push(b.subarray(0, maxBytes - size));
      body.destroy();
      return { body: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(b);
    size += b.length;
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

export class OutboundClient {
  readonly agent: Agent;

  constructor(private readonly opts: OutboundOptions) {
    const block = opts.blockPrivate;
    this.agent = new Agent({
      connections: opts.perHostConnections ?? 16,
      connectTimeout: opts.connectTimeoutMs ?? 5000,
      connect: { lookup: (hostname, options, cb) => lookupPublic(hostname, options, cb as LookupCallback, block) },
    });
  }

  /** Refuses literal internal IPs up front (DNS names are checked at connect time). */
  checkUrl(url: string): void {
    const u = new URL(url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new OutboundBlockedError(`${u.protocol} URLs are not allowed`);
    const host = this.opts.blockPrivate ? internalHostOf(u) : null;
    if (host) throw new OutboundBlockedError(`${host} is an internal address`);
  }

  /** POSTs a body; never follows redirects; reads at most `maxBytes` of the answer. */
  async post(
    url: string,
    body: string,
    headers: Record<string, string>,
    limits: { timeoutMs: number; maxBytes: number },
  ): Promise<OutboundResponse> {
    const res = await this.open(url, body, headers, limits.timeoutMs);
    const { body: answer, truncated } = await readUpTo(res.body, limits.maxBytes);
    return { status: res.statusCode, headers: res.headers, body: answer, truncated };
  }

  /**
   * post() up to the answer's status and headers, its body left to the caller (read it with
   * readUpTo): for callers that must keep the status when the body then stalls. The same URL
   * check, agent and time-outs (total, headers, body); never follows redirects.
   */
  open(url: string, body: string, headers: Record<string, string>, timeoutMs: number) {
    this.checkUrl(url);
    return request(url, {
      method: 'POST',
      body,
      headers,
      dispatcher: this.agent,
      signal: AbortSignal.timeout(timeoutMs),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
