import { createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local stand-in for Google: the OAuth 2.0 token endpoint (service-account JWT bearer grant,
 * RS256 assertions verified with the public key of a key pair made here), the Play Developer
 * API's one-time product purchases (get, acknowledge, consume) and order refunds, each
 * requiring an access token it issued, and the keys (JWKS) that sign Pub/Sub push tokens, with
 * a signer for those tokens. Tests set the purchase state, queue faults and read the calls.
 */

/** The token endpoint Google names as every assertion's audience (google-auth-library sends it). */
export const GOOGLE_TOKEN_AUDIENCE = 'https://oauth2.googleapis.com/token';
const SCOPE = 'https://www.googleapis.com/auth/androidpublisher';

/** Schema$ProductPurchase of the Play Developer API v3 (the fields the service reads). */
export interface PlayPurchase {
  kind?: string;
  purchaseTimeMillis?: string;
  /** 0 purchased, 1 canceled, 2 pending. */
  purchaseState: number;
  /** 0 yet to be consumed, 1 consumed. */
  consumptionState: number;
  /** 0 yet to be acknowledged, 1 acknowledged. */
  acknowledgementState: number;
  developerPayload?: string;
  orderId?: string;
  /** Absent for a normal purchase; 0 test (license tester), 1 promo, 2 rewarded. */
  purchaseType?: number;
  obfuscatedExternalAccountId?: string;
  productId?: string;
  quantity?: number;
  regionCode?: string;
}

export interface ServiceAccount {
  client_email: string;
  private_key: string;
  token_uri: string;
}

export interface PlayCall {
  method: string;
  path: string;
  /** The access token presented was one this stand-in issued. */
  authorized: boolean;
}

export interface PlayFault {
  /** Only a request whose path matches (default: any). */
  when?: RegExp;
  status: number;
  body?: unknown;
  /** Never answer (the client's time-out must end the request). */
  hang?: boolean;
}

export interface GooglePlayStandIn {
  url: string;
  /** The token endpoint: the service account's `token_uri`. */
  tokenUri: string;
  /** Served as Pub/Sub push keys (GOOGLE_PUSH_JWKS_URL). */
  jwksUrl: string;
  /** A service account the token endpoint knows. */
  serviceAccount: ServiceAccount;
  /** The same account name with a key the endpoint does not know. */
  wrongKeyAccount: ServiceAccount;
  /** Every API call (not token requests), in order. */
  calls: PlayCall[];
  /** Token requests: whether each assertion verified. */
  tokenRequests: { verified: boolean; reason?: string }[];
  /** The next API requests (matching `when`) answer these instead, each once, first in first out. */
  faults: PlayFault[];
  /** Sets (or replaces) a purchase. */
  setPurchase(packageName: string, productId: string, token: string, p: PlayPurchase): void;
  purchase(packageName: string, productId: string, token: string): PlayPurchase | undefined;
  /**
   * Awaited before an API call is answered (after it is recorded and authorized): a test
   * holds a call here, e.g. to kill the service while it waits. 'drop': the call is not
   * carried out and its connection is closed (Google never saw it through).
   */
  beforeAnswer: ((call: PlayCall) => Promise<void | 'drop'>) | null;
  /** What orders.get says the buyer paid for a Google order id (Order.total); unset: 404. */
  orderTotals: Map<string, { currencyCode: string; units: string; nanos: number }>;
  /** Order ids refunded through orders.refund, as `packageName/orderId`. */
  refunds: string[];
  /** A Pub/Sub push OIDC token (RS256, kid of the served key unless `key` is another). */
  signPushToken(claims: Partial<PushClaims>, opts?: { key?: KeyObject; kid?: string }): string;
  close(): Promise<void>;
}

export interface PushClaims {
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  email: string;
  email_verified: boolean;
  sub: string;
}

interface PlayState {
  purchases: Map<string, PlayPurchase>;
  accessTokens: Set<string>;
  accountKeys: Map<string, KeyObject>;
}

export async function startGooglePlay(): Promise<GooglePlayStandIn> {
  const account = rsaKeyPair();
  const wrong = rsaKeyPair();
  const pushKey = rsaKeyPair();
  const pushKid = randomBytes(8).toString('hex');
  const email = 'play-api@test-project.iam.gserviceaccount.com';
  const st: PlayState = { purchases: new Map(), accessTokens: new Set(), accountKeys: new Map([[email, account.publicKey]]) };

  const s: GooglePlayStandIn = {
    url: '',
    tokenUri: '',
    jwksUrl: '',
    serviceAccount: { client_email: email, private_key: pem(account.privateKey), token_uri: '' },
    wrongKeyAccount: { client_email: email, private_key: pem(wrong.privateKey), token_uri: '' },
    calls: [],
    tokenRequests: [],
    faults: [],
    refunds: [],
    orderTotals: new Map(),
    beforeAnswer: null,
    setPurchase: (pkg, productId, token, p) => st.purchases.set(key(pkg, productId, token), { ...p }),
    purchase: (pkg, productId, token) => st.purchases.get(key(pkg, productId, token)),
    signPushToken: (claims, opts = {}) => {
      const now = Math.floor(Date.now() / 1000);
      const payload: PushClaims = {
        iss: 'https://accounts.google.com',
        aud: '',
        iat: now,
        exp: now + 3600,
        email: 'pubsub-push@test-project.iam.gserviceaccount.com',
        email_verified: true,
        sub: '1234567890',
        ...claims,
      };
      return signJwt({ alg: 'RS256', kid: opts.kid ?? pushKid, typ: 'JWT' }, payload, opts.key ?? pushKey.privateKey);
    },
    close: async () => {},
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (req.method === 'POST' && path === '/token') return tokenEndpoint(st, s, body, res);
      if (req.method === 'GET' && path === '/jwks') {
        const jwk = { ...pushKey.publicKey.export({ format: 'jwk' }), kid: pushKid, alg: 'RS256', use: 'sig' };
        return json(res, 200, { keys: [jwk] }, { 'cache-control': 'public, max-age=3600' });
      }
      void apiEndpoint(st, s, req.method ?? 'GET', path, req.headers.authorization, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  s.tokenUri = `${s.url}/token`;
  s.jwksUrl = `${s.url}/jwks`;
  s.serviceAccount.token_uri = s.tokenUri;
  s.wrongKeyAccount.token_uri = s.tokenUri;
  s.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return s;
}

function tokenEndpoint(st: PlayState, s: GooglePlayStandIn, body: string, res: http.ServerResponse): void {
  const form = new URLSearchParams(body);
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
    s.tokenRequests.push({ verified: false, reason: 'grant_type' });
    return json(res, 400, { error: 'unsupported_grant_type', error_description: 'Invalid grant_type.' });
  }
  const reason = assertionProblem(st, form.get('assertion') ?? '');
  s.tokenRequests.push(reason ? { verified: false, reason } : { verified: true });
  if (reason) return json(res, 400, { error: 'invalid_grant', error_description: reason });
  const token = `ya29.${randomBytes(24).toString('base64url')}`;
  st.accessTokens.add(token);
  json(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
}

/** Why an RS256 JWT bearer assertion is refused, as Google words it; null when it verifies. */
function assertionProblem(st: PlayState, assertion: string): string | null {
  const parts = assertion.split('.');
  if (parts.length !== 3) return 'Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.';
  const header = parseSegment(parts[0]!) as { alg?: string } | null;
  const claims = parseSegment(parts[1]!) as { iss?: string; aud?: string; scope?: string; iat?: number; exp?: number } | null;
  if (!header || !claims || header.alg !== 'RS256') return 'Invalid JWT header.';
  const publicKey = st.accountKeys.get(claims.iss ?? '');
  if (!publicKey) return 'Invalid grant: account not found';
  const ok = verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), publicKey, Buffer.from(parts[2]!, 'base64url'));
  if (!ok) return 'Invalid JWT Signature.';
  if (claims.aud !== GOOGLE_TOKEN_AUDIENCE) return 'Invalid JWT: audience';
  const now = Math.floor(Date.now() / 1000);
  if (typeof claims.iat !== 'number' || typeof claims.exp !== 'number' || claims.exp <= now || claims.exp - claims.iat > 3600 || claims.iat > now + 300) {
    return 'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.';
  }
  if (!(claims.scope ?? '').split(' ').includes(SCOPE)) return 'Invalid OAuth scope or ID token audience provided.';
  return null;
}

const PURCHASE = /^\/androidpublisher\/v3\/applications\/([^/]+)\/purchases\/products\/([^/]+)\/tokens\/([^/:]+)(:acknowledge|:consume)?$/;
const REFUND = /^\/androidpublisher\/v3\/applications\/([^/]+)\/orders\/([^/:]+):refund$/;
const ORDER = /^\/androidpublisher\/v3\/applications\/([^/]+)\/orders\/([^/:]+)$/;

async function apiEndpoint(st: PlayState, s: GooglePlayStandIn, method: string, path: string, authorization: string | undefined, res: http.ServerResponse): Promise<void> {
  const bearer = /^Bearer (.+)$/.exec(authorization ?? '')?.[1];
  const authorized = bearer !== undefined && st.accessTokens.has(bearer);
  const call = { method, path, authorized };
  s.calls.push(call);
  if (!authorized) return apiError(res, 401, 'Request had invalid authentication credentials.', 'UNAUTHENTICATED');
  if ((await s.beforeAnswer?.(call)) === 'drop') {
    res.destroy();
    return;
  }
  const at = s.faults.findIndex((f) => !f.when || f.when.test(path));
  const fault = at < 0 ? undefined : s.faults.splice(at, 1)[0];
  if (fault?.hang) return; // the client's time-out ends it
  if (fault) return json(res, fault.status, fault.body ?? { error: { code: fault.status, message: 'Backend Error', status: 'UNAVAILABLE' } });

  const p = PURCHASE.exec(path);
  if (p) {
    const [, pkg, productId, token, verb] = p.map((x) => (x === undefined ? x : decodeURIComponent(x)));
    const purchase = st.purchases.get(key(pkg!, productId!, token!));
    if (!purchase) return apiError(res, 400, 'The purchase token is no longer valid.', 'INVALID_ARGUMENT');
    if (!verb && method === 'GET') return json(res, 200, { kind: 'androidpublisher#productPurchase', ...purchase });
    if (method !== 'POST') return apiError(res, 405, 'Method not allowed', 'INVALID_ARGUMENT');
    if (purchase.purchaseState !== 0) return apiError(res, 400, 'The purchase is not in a valid state to perform the desired operation.', 'FAILED_PRECONDITION');
    if (verb === ':consume') {
      if (purchase.consumptionState === 1) return apiError(res, 400, 'The product purchase is not owned by the user.', 'FAILED_PRECONDITION');
      purchase.consumptionState = 1;
    }
    purchase.acknowledgementState = 1;
    res.writeHead(204).end();
    return;
  }
  const r = REFUND.exec(path);
  if (r && method === 'POST') {
    const [, pkg, orderId] = r.map((x) => (x === undefined ? x : decodeURIComponent(x)));
    const known = [...st.purchases.entries()].some(([k, v]) => k.startsWith(`${pkg}/`) && v.orderId === orderId);
    if (!known) return apiError(res, 404, 'Order not found.', 'NOT_FOUND');
    if (s.refunds.includes(`${pkg}/${orderId}`)) return apiError(res, 400, 'The order has already been refunded.', 'FAILED_PRECONDITION');
    s.refunds.push(`${pkg}/${orderId}`);
    res.writeHead(204).end();
    return;
  }
  const o = ORDER.exec(path);
  const total = o && method === 'GET' ? s.orderTotals.get(decodeURIComponent(o[2]!)) : undefined;
  if (o && total) return json(res, 200, { orderId: decodeURIComponent(o[2]!), state: 'PROCESSED', total, buyerAddress: { buyerCountry: 'US' } });
  apiError(res, 404, 'Not found', 'NOT_FOUND');
}

/** A Real-time developer notification wrapped as Pub/Sub pushes it. */
export function pubsubPush(notification: DeveloperNotification, messageId = randomBytes(6).toString('hex')): unknown {
  return {
    message: {
      data: Buffer.from(JSON.stringify(notification)).toString('base64'),
      messageId,
      message_id: messageId,
      publishTime: new Date().toISOString(),
      publish_time: new Date().toISOString(),
    },
    subscription: 'projects/test-project/subscriptions/play-rtdn',
  };
}

export interface DeveloperNotification {
  version: string;
  packageName: string;
  eventTimeMillis: string;
  oneTimeProductNotification?: { version: string; notificationType: number; purchaseToken: string; sku: string };
  voidedPurchaseNotification?: { purchaseToken: string; orderId: string; productType: number; refundType: number };
  testNotification?: { version: string };
}

/** ONE_TIME_PRODUCT_PURCHASED (1) or ONE_TIME_PRODUCT_CANCELED (2). */
export function oneTimeProductNotification(packageName: string, purchaseToken: string, sku: string, notificationType = 1): DeveloperNotification {
  return { version: '1.0', packageName, eventTimeMillis: String(Date.now()), oneTimeProductNotification: { version: '1.0', notificationType, purchaseToken, sku } };
}

/** A voided one-time purchase (productType 2), full refund (refundType 1). */
export function voidedPurchaseNotification(packageName: string, purchaseToken: string, orderId: string): DeveloperNotification {
  return { version: '1.0', packageName, eventTimeMillis: String(Date.now()), voidedPurchaseNotification: { purchaseToken, orderId, productType: 2, refundType: 1 } };
}

export function rsaKeyPair(): { privateKey: KeyObject; publicKey: KeyObject } {
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

function signJwt(header: object, payload: object, privateKey: KeyObject): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${sign('RSA-SHA256', Buffer.from(input), privateKey).toString('base64url')}`;
}

function pem(k: KeyObject): string {
  return k.export({ format: 'pem', type: 'pkcs8' }) as string;
}

export function publicPem(k: KeyObject): string {
  return createPublicKey(k).export({ format: 'pem', type: 'spki' }) as string;
}

function b64(v: object): string {
  return Buffer.from(JSON.stringify(v)).toString('base64url');
}

function parseSegment(seg: string): unknown {
  try {
    return JSON.parse(Buffer.from(seg, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
}

function key(pkg: string, productId: string, token: string): string {
  return `${pkg}/${productId}/${token}`;
}

function apiError(res: http.ServerResponse, code: number, message: string, status: string): void {
  json(res, code, { error: { code, message, status, errors: [{ message, domain: 'androidpublisher', reason: status }] } });
}

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', ...headers }).end(JSON.stringify(body));
}
