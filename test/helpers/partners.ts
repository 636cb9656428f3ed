import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorizationHeader, checkTimestamp, parseAuthorization, sha256Hex, signatureMatches } from '../../src/signing/signer.js';
import { admin, type Answer, type TestService } from './service.js';

export interface TestPartner {
  partnerId: string;
  secret: string;
  keyId: string;
}

let seq = 0;
/** Each test makes its own partner, granted the given games. */
export async function createPartner(t: TestService, games: string[], settings: Record<string, unknown> = {}): Promise<TestPartner> {
  const partnerId = `p${process.pid}_${++seq}_${randomBytes(3).toString('hex')}`;
  const r = await admin(t, 'POST', '/admin/v1/partners', { partner_id: partnerId, name: 'Test partner', games, ...settings });
  if (r.status !== 201) throw new Error(`create partner: ${r.status} ${r.text}`);
  return { partnerId, secret: r.body.secret_key, keyId: r.body.key_id };
}

/** A GET signed as a partner signs it (`Partner=<id>`): the URI is signed exactly as sent. */
export async function partnerGet(
  t: TestService,
  partner: TestPartner,
  uri: string,
  opts: { method?: string; nowMs?: number; secret?: string; authorization?: string | null } = {},
): Promise<Answer> {
  const method = opts.method ?? 'GET';
  const now = opts.nowMs ?? t.clock?.now() ?? Date.now();
  const auth =
    opts.authorization !== undefined
      ? opts.authorization
      : authorizationHeader({ kind: 'partner', id: partner.partnerId }, opts.secret ?? partner.secret, method, uri, '', now);
  const res = await fetch(t.url + uri, { method, headers: auth === null ? {} : { authorization: auth } });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').startsWith('application/json') && text ? JSON.parse(text) : undefined;
  return { status: res.status, headers: res.headers, body: json, text };
}

export function queryUri(gameId: string, partnerUserId: string): string {
  return `/v1/query-binding?game_id=${encodeURIComponent(gameId)}&partner_user_id=${encodeURIComponent(partnerUserId)}`;
}

export interface GmRoleJson {
  [k: string]: unknown;
}

export function role(roleId: string, overrides: Record<string, unknown> = {}): GmRoleJson {
  return {
    server_id: 12,
    server_name: 'S12 青龙',
    role_id: roleId,
    role_name: `name-${roleId}`,
    role_level: 42,
    avatar_url: 'https://cdn.example.com/a.png',
    create_time: 1_700_000_000,
    extra: { class: 'mage' },
    ...overrides,
  };
}

/** How the fake GM answers the next requests. */
export type GmMode =
  | { kind: 'roles' }
  | { kind: 'status'; status: number; body: string }
  | { kind: 'raw'; body: string | Buffer; contentType?: string | null }
  | { kind: 'hold' }
  | { kind: 'destroy' };

/**
 * A game's GM endpoint on 127.0.0.1 (PROTOCOL 8): verifies the service's SEAYOO-HMAC-SHA256
 * signature with the game's keys and the request body shape, answers ListRoles from `roles`.
 * Every request that fails verification is recorded in `failures` (tests expect none).
 */
export class FakeGm {
  readonly roles = new Map<string, GmRoleJson[]>();
  readonly calls: { gameId: string; comboId: string; requestId: string }[] = [];
  readonly failures: string[] = [];
  mode: GmMode = { kind: 'roles' };
  /** Requests to /hang... received (and held). */
  hanging = 0;
  private readonly held: http.ServerResponse[] = [];
  private server!: http.Server;
  url = '';

  constructor(
    private readonly secrets: () => Map<string, string[]>,
    private readonly now: () => number,
  ) {}

  async start(path = '/gm?x=1&y=a%20b'): Promise<this> {
    this.server = http.createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
    return this;
  }

  callsFor(gameId: string): number {
    return this.calls.filter((c) => c.gameId === gameId).length;
  }

  /** Answers every held request from `roles`. */
  release(): void {
    for (const res of this.held.splice(0)) this.answerRoles(res, (res as unknown as { comboId: string }).comboId);
  }

  async stop(): Promise<void> {
    for (const res of this.held.splice(0)) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    // Not GM requests: a notify_url on the GM's host that never answers (held until stop()).
    if (req.url?.startsWith('/hang')) {
      this.hanging++;
      this.held.push(res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const check = this.verify(req, raw);
      if (typeof check === 'string') {
        this.failures.push(check);
        res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_signature', message: check }));
        return;
      }
      this.calls.push(check);
      this.answer(res, check.comboId);
    });
  }

  private verify(req: http.IncomingMessage, raw: Buffer): { gameId: string; comboId: string; requestId: string } | string {
    if (req.method !== 'POST') return `method ${req.method}`;
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) return 'content-type';
    const auth = parseAuthorization(req.headers.authorization);
    if (typeof auth === 'string') return auth;
    if (auth.principal.kind !== 'game') return 'not Game=';
    const skew = checkTimestamp(auth.timestamp, this.now());
    if (skew) return skew;
    const keys = this.secrets().get(auth.principal.id) ?? [];
    if (!signatureMatches(keys, auth.signature, 'POST', req.url ?? '', auth.timestamp, sha256Hex(raw))) return 'signature does not match';
    let body: any;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      return 'body is not JSON';
    }
    const keysOk = JSON.stringify(Object.keys(body).sort()) === JSON.stringify(['args', 'command', 'origin', 'request_id', 'version']);
    if (!keysOk || body.version !== '2.0' || body.origin !== 'combo/binding' || body.command !== 'ListRoles') return `body ${raw.toString()}`;
    if (typeof body.request_id !== 'string' || !body.request_id || this.calls.some((c) => c.requestId === body.request_id)) return 'request_id';
    if (typeof body.args?.combo_id !== 'string' || Object.keys(body.args).length !== 1) return 'args';
    return { gameId: auth.principal.id, comboId: body.args.combo_id, requestId: body.request_id };
  }

  private answer(res: http.ServerResponse, comboId: string): void {
    const m = this.mode;
    switch (m.kind) {
      case 'roles':
        return this.answerRoles(res, comboId);
      case 'status':
        res.writeHead(m.status, { 'content-type': 'application/json' }).end(m.body);
        return;
      case 'raw':
        // contentType null: no Content-Type header at all.
        res.writeHead(200, m.contentType === null ? {} : { 'content-type': m.contentType ?? 'application/json' }).end(m.body);
        return;
      case 'hold':
        (res as unknown as { comboId: string }).comboId = comboId;
        this.held.push(res);
        return;
      case 'destroy':
        res.socket?.destroy();
        return;
    }
  }

  private answerRoles(res: http.ServerResponse, comboId: string): void {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ roles: this.roles.get(comboId) ?? [] }));
  }
}

/** Polls `cond` until true or the deadline (no fixed sleeps). */
export async function until(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
