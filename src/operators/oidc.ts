import type { FastifyInstance, FastifyRequest } from 'fastify';
import * as client from 'openid-client';
import { Type } from 'typebox';
import { Errors } from '../errors.js';
import type { Clock } from '../lib/clock.js';
import type { SecretBox } from '../lib/secret-box.js';
import { readCookie, sessionCookie, type CookieSettings } from './guard.js';
import type { SignInService } from './sign-in.js';

/** OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET (operators.md 1). */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The provider's name on the sign-in button. */
  displayName: string;
}

export interface OidcOptions {
  settings: OidcSettings;
  signIn: SignInService;
  secrets: SecretBox;
  cookie: CookieSettings;
  clock: Clock;
  publicBaseUrl: string;
}

/** The sign-in in progress (state, nonce, PKCE verifier), sealed in a cookie for 10 minutes. */
const FLOW_COOKIE = 'combo_oidc';
const FLOW_TTL_MS = 10 * 60_000;
const CALLBACK = '/admin/v1/oidc/callback';

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  expires: number;
}

/**
 * Console sign-in with an OpenID Connect provider (authorization code with PKCE, openid-client).
 * Accounts are matched by the ID token's email, which the provider must mark verified; an email
 * with no account is refused. The provider's metadata is discovered on the first sign-in.
 */
export function registerOidcRoutes(app: FastifyInstance, o: OidcOptions): void {
  let discovered: Promise<client.Configuration> | null = null;
  const configuration = () => {
    const issuer = new URL(o.settings.issuer);
    // An http issuer is allowed only on a loopback address (a provider on the same machine).
    const execute = issuer.protocol === 'http:' ? [client.allowInsecureRequests] : [];
    discovered ??= client.discovery(issuer, o.settings.clientId, undefined, client.ClientSecretBasic(o.settings.clientSecret), { execute }).catch((e: unknown) => {
      discovered = null;
      throw Errors.serviceUnavailable(`the OpenID Connect provider could not be reached: ${(e as Error).message}`);
    });
    return discovered;
  };
  const redirectUri = `${o.publicBaseUrl}${CALLBACK}`;
  // Lax, not Strict: the provider's redirect back is a cross-site navigation.
  const flowCookie = (value: string, maxAge: number) => `${FLOW_COOKIE}=${value}; Path=${CALLBACK}; HttpOnly; SameSite=Lax${o.cookie.secure ? '; Secure' : ''}; Max-Age=${maxAge}`;

  app.get('/admin/v1/oidc/start', {
    config: { auth: 'none' },
    schema: { tags: ['admin'], summary: 'Console sign-in with the OpenID Connect provider: redirects to it', querystring: Type.Object({}, { additionalProperties: false }) },
    handler: async (_req, reply) => {
      const config = await configuration();
      const flow: Flow = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier(), expires: o.clock.now() + FLOW_TTL_MS };
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: 'openid email profile',
        state: flow.state,
        nonce: flow.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
        code_challenge_method: 'S256',
      });
      reply.header('set-cookie', flowCookie(encodeURIComponent(o.secrets.seal(JSON.stringify(flow))), FLOW_TTL_MS / 1000));
      return reply.redirect(url.href, 302);
    },
  });

  app.get(CALLBACK, {
    config: { auth: 'none' },
    schema: { tags: ['admin'], summary: "The provider's redirect back: signs the account in and redirects to the console", querystring: Type.Object({}, { additionalProperties: Type.String() }) },
    handler: async (req, reply) => {
      const flow = readFlow(req, o);
      const config = await configuration();
      const current = new URL(req.url, redirectUri);
      let claims: Record<string, unknown>;
      try {
        const tokens = await client.authorizationCodeGrant(config, current, { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce });
        claims = (tokens.claims() ?? {}) as Record<string, unknown>;
        // A provider may keep the email out of the ID token: its userinfo endpoint tells it.
        if (typeof claims.email !== 'string') claims = await client.fetchUserInfo(config, tokens.access_token, claims.sub as string);
      } catch (e) {
        throw Errors.unauthorized(`the OpenID Connect sign-in failed: ${(e as Error).message}`);
      }
      const { email, email_verified: verified } = claims;
      if (typeof email !== 'string' || verified !== true) throw Errors.forbidden('the provider gave no verified email for this sign-in');
      const started = await o.signIn.signInByEmail(email, { address: req.ip, userAgent: String(req.headers['user-agent'] ?? '') });
      reply.header('set-cookie', [sessionCookie(o.cookie, started.token), flowCookie('', 0)]);
      return reply.redirect('/console/', 302);
    },
  });
}

function readFlow(req: FastifyRequest, o: OidcOptions): Flow {
  const raw = readCookie(req, FLOW_COOKIE);
  let flow: Flow | null = null;
  try {
    flow = raw ? (JSON.parse(o.secrets.open(decodeURIComponent(raw))) as Flow) : null;
  } catch {
    flow = null;
  }
  if (!flow || flow.expires <= o.clock.now()) throw Errors.unauthorized('no OpenID Connect sign-in is in progress in this browser (or it took over 10 minutes): start again');
  return flow;
}
