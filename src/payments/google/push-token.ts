import { createPublicKey, type JsonWebKey } from 'node:crypto';
import { OAuth2Client } from 'google-auth-library';
import type { Logger } from 'pino';
import { request } from 'undici';
import { Errors } from '../../errors.js';

/** Who signs Pub/Sub push tokens (the `iss` claim). */
export const GOOGLE_ISSUERS = ['accounts.google.com', 'https://accounts.google.com'];

export interface PushTokenOptions {
  /** GOOGLE_PUSH_JWKS_URL: Google's OIDC signing keys, as a JWK set. */
  jwksUrl: string;
  timeoutMs: number;
  log: Logger;
}

/** Keys are fetched again at most this often when a token names a key not in the set. */
const UNKNOWN_KID_REFETCH_MS = 60_000;
/** How long keys are kept when Google's answer says nothing of it (it says max-age). */
const DEFAULT_KEYS_TTL_MS = 3_600_000;

/**
 * Verifies the OIDC token Pub/Sub puts in a push request's Authorization header: RS256
 * signature by one of Google's keys (fetched from `jwksUrl`, cached as Cache-Control says),
 * issuer Google, audience the game's `push_audience`, within its lifetime. The checks are
 * google-auth-library's (OAuth2Client.verifySignedJwtWithCertsAsync); the keys are read here
 * because the library's own fetch is of Google's PEM list, which a deployment cannot point
 * elsewhere by a JWK set URL.
 */
export class PushTokenVerifier {
  private readonly oauth = new OAuth2Client();
  private keys: { pems: Record<string, string>; until: number; fetchedAt: number } | null = null;
  private fetching: Promise<Record<string, string>> | null = null;

  constructor(private readonly o: PushTokenOptions) {}

  /** Throws 401 invalid_token unless `authorization` carries a valid push token for `audience`. */
  async verify(authorization: string | undefined, audience: string): Promise<void> {
    const token = /^Bearer ([A-Za-z0-9_\-.]{1,4096})$/.exec(authorization ?? '')?.[1];
    if (!token) throw Errors.invalidToken('a Pub/Sub push token (Authorization: Bearer) is required');
    const kid = kidOf(token);
    let pems = await this.pems(false);
    if (kid !== undefined && !(kid in pems)) pems = await this.pems(true);
    try {
      await this.oauth.verifySignedJwtWithCertsAsync(token, pems, audience, GOOGLE_ISSUERS);
    } catch (e) {
      // The library's messages quote the token: log only their first words.
      const reason = String((e as Error).message).split(/[:,]/)[0];
      this.o.log.warn({ reason }, 'Google push token refused');
      throw Errors.invalidToken(`the push token is not valid: ${reason}`);
    }
  }

  private async pems(unknownKid: boolean): Promise<Record<string, string>> {
    const now = Date.now();
    const k = this.keys;
    if (k && now < k.until && (!unknownKid || now - k.fetchedAt < UNKNOWN_KID_REFETCH_MS)) return k.pems;
    this.fetching ??= this.fetchKeys().finally(() => (this.fetching = null));
    return this.fetching;
  }

  private async fetchKeys(): Promise<Record<string, string>> {
    let body: { keys?: (JsonWebKey & { kid?: string })[] };
    let maxAge: number | undefined;
    try {
      const r = await request(this.o.jwksUrl, { headersTimeout: this.o.timeoutMs, bodyTimeout: this.o.timeoutMs });
      if (r.statusCode !== 200) {
        await r.body.dump();
        throw new Error(`HTTP ${r.statusCode}`);
      }
      body = (await r.body.json()) as typeof body;
      const cc = String(r.headers['cache-control'] ?? '');
      const m = /max-age=(\d+)/.exec(cc);
      maxAge = m ? Number(m[1]) * 1000 : undefined;
    } catch (e) {
      this.o.log.warn({ err: String((e as Error).message) }, 'Google push keys could not be fetched');
      if (this.keys) return this.keys.pems;
      throw Errors.serviceUnavailable('the keys that sign Google push tokens are unavailable; try again', { 'retry-after': '5' });
    }
    const pems: Record<string, string> = {};
    for (const jwk of body.keys ?? []) {
      if (typeof jwk.kid !== 'string' || jwk.kty !== 'RSA') continue;
      pems[jwk.kid] = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' }) as string;
    }
    const now = Date.now();
    this.keys = { pems, fetchedAt: now, until: now + (maxAge ?? DEFAULT_KEYS_TTL_MS) };
    return pems;
  }
}

function kidOf(token: string): string | undefined {
  try {
    const header = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid?: unknown };
    return typeof header.kid === 'string' ? header.kid : undefined;
  } catch {
    return undefined;
  }
}
