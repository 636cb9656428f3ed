import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import { isJsonContentType } from '../lib/media-type.js';
import type { OutboundClient } from '../lib/outbound.js';
import { wireUrl } from '../lib/wire-url.js';
import { authorizationHeader } from '../signing/signer.js';
import type { Role } from './schemas.js';

/**
 * The game could not give an answer (no GM endpoint, down, slow, error answer, or an answer of
 * the wrong shape). `message` is for the log and the operator; `reason` says the same to a
 * partner: what is wrong with the game, without its URL or its network errors.
 */
export class GmUnavailableError extends Error {
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
    this.name = 'GmUnavailableError';
  }
}

/** What a GM request needs to know of the game. */
export interface GmTarget {
  gameId: string;
  gmUrl: string | null;
  /** The game's newest key: it signs the request (PROTOCOL 8). */
  secret: string | undefined;
}

export interface GmClientDeps {
  outbound: OutboundClient;
  clock: Clock;
  ids: IdGenerator;
  timeoutMs: number;
  /** Answers larger than this are refused (a role list is small). */
  maxBytes?: number;
}

export const GM_MAX_ANSWER_BYTES = 1024 * 1024;

/** A GM's 404 `role_not_found` answer: an answer, not an outage (see GmClient.call). */
const ROLE_NOT_FOUND = Symbol('role_not_found');

/** Service -> game GM requests (PROTOCOL 8), signed like the Combo SDKs expect them. */
export class GmClient {
  constructor(private readonly d: GmClientDeps) {}

  /** `ListRoles` for one player; throws GmUnavailableError when there is no usable answer. */
  async listRoles(target: GmTarget, comboId: string): Promise<Role[]> {
    const body = await this.call(target, 'ListRoles', { combo_id: comboId });
    if (body === ROLE_NOT_FOUND) return [];
    const roles = parseListRoles(body);
    if (typeof roles === 'string') throw new GmUnavailableError(`ListRoles answer of ${target.gameId} is invalid: ${roles}`, `the game's role list was invalid: ${roles}`);
    return roles;
  }

  private async call(target: GmTarget, command: string, args: Record<string, unknown>): Promise<unknown> {
    const { outbound, clock, ids, timeoutMs } = this.d;
    if (!target.gmUrl) throw new GmUnavailableError(`game ${target.gameId} has no GM URL`, 'the game has no GM endpoint configured (gm_url)');
    if (!target.secret) throw new GmUnavailableError(`game ${target.gameId} has no signing key`, 'the game has no signing key');
    const url = wireUrl(target.gmUrl);
    const payload = JSON.stringify({ version: '2.0', request_id: prefixedId('gmr', ids), origin: 'combo/binding', command, args });
    const uri = url.pathname + url.search;
    const headers = {
      'content-type': 'application/json',
      authorization: authorizationHeader({ kind: 'game', id: target.gameId }, target.secret, 'POST', uri, payload, clock.now()),
    };
    let res;
    try {
      res = await outbound.post(url.href, payload, headers, { timeoutMs, maxBytes: this.d.maxBytes ?? GM_MAX_ANSWER_BYTES });
    } catch (e) {
      // The error's name says what happened (ConnectTimeoutError, OutboundBlockedError, ...);
      // its message may name the game's host, which a partner is not told.
      const name = (e as Error).name;
      throw new GmUnavailableError(`GM request to ${target.gameId} failed: ${name}: ${(e as Error).message}`, `the game's GM endpoint could not be reached (${name})`);
    }
    if (res.truncated) {
      const limit = this.d.maxBytes ?? GM_MAX_ANSWER_BYTES;
      throw new GmUnavailableError(`GM answer of ${target.gameId} is larger than ${limit} bytes`, `the game's GM answer was larger than ${limit} bytes`);
    }
    // A body is JSON only when its Content-Type says so (rest-interface 1, rule 3).
    const contentType = res.headers['content-type'];
    const json = isJsonContentType(typeof contentType === 'string' ? contentType : undefined) ? parseJson(res.body) : undefined;
    if (res.status !== 200) {
      const err = json && typeof json === 'object' ? (json as { error?: unknown }).error : undefined;
      // The game answered that the player has no such role: 404 as a rule; the Node.js SDK's GM
      // handler sends an error it has no status for as 500.
      if (err === 'role_not_found' && res.status >= 400) return ROLE_NOT_FOUND;
      const code = typeof err === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(err) ? ` ${err}` : '';
      throw new GmUnavailableError(`GM of ${target.gameId} answered ${res.status}${code}`, `the game's GM endpoint answered HTTP ${res.status}${code}`);
    }
    if (json === undefined) {
      const what = `not JSON (Content-Type: ${typeof contentType === 'string' ? JSON.stringify(contentType.slice(0, 64)) : 'none'})`;
      throw new GmUnavailableError(`GM answer of ${target.gameId} is ${what}`, `the game's GM answer was ${what}`);
    }
    return json;
  }
}

function parseJson(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);

/** Checks a ListRoles answer against the documented shape; returns the roles or a reason. */
export function parseListRoles(json: unknown): Role[] | string {
  if (!isObject(json) || !Array.isArray(json.roles)) return 'expected {"roles": [...]}';
  const roles: Role[] = [];
  for (const [i, r] of json.roles.entries()) {
    const role = parseRole(r);
    if (typeof role === 'string') return `roles[${i}]${role}`;
    roles.push(role);
  }
  return roles;
}

/** What a JSON value is, for a message (`a string`, `null`, ...). */
function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (v === undefined) return 'missing';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'number') return Number.isSafeInteger(v) ? 'an integer' : 'a number with a fraction or out of range';
  return `a${typeof v === 'object' ? 'n' : ''} ${typeof v}`;
}

/** The role, or what is wrong with it: `.field must be ... (got ...)`, or ` ...` for the whole. */
function parseRole(r: unknown): Role | string {
  if (!isObject(r)) return ` must be an object (got ${jsonType(r)})`;
  const wrong = (field: string, must: string) => `.${field} must be ${must} (got ${jsonType(r[field])})`;
  if (!isInt(r.server_id)) return wrong('server_id', 'an integer');
  if (typeof r.server_name !== 'string') return wrong('server_name', 'a string');
  if (typeof r.role_id !== 'string' || r.role_id === '') return r.role_id === '' ? '.role_id must be a non-empty string (got "")' : wrong('role_id', 'a non-empty string');
  if (typeof r.role_name !== 'string') return wrong('role_name', 'a string');
  if (!isInt(r.role_level)) return wrong('role_level', 'an integer');
  // avatar_url: "" means no avatar; an SDK may leave it out or send null for the same.
  if (r.avatar_url !== undefined && r.avatar_url !== null && typeof r.avatar_url !== 'string') return wrong('avatar_url', 'a string');
  if (!isInt(r.create_time)) return wrong('create_time', 'an integer (Unix seconds)');
  return {
    server_id: r.server_id,
    server_name: r.server_name,
    role_id: r.role_id,
    role_name: r.role_name,
    role_level: r.role_level,
    avatar_url: typeof r.avatar_url === 'string' ? r.avatar_url : '',
    create_time: r.create_time,
  };
}
