/**
 * operators.md 1: console sign-in with OpenID Connect, against a real provider (the
 * `oidc-provider` package) on loopback: authorization code with PKCE, the account matched by
 * the provider's verified email, an unknown email refused.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createAccount } from './helpers/operators.js';
import { startService, type TestService } from './helpers/service.js';

const CLIENT = { client_id: 'combo-console', client_secret: 'combo-console-secret-0123456789' };
const PUBLIC_BASE_URL = 'http://console.example.test';
/** The provider's users: who signs in, and whether the provider vouches for the email. */
const USERS: Record<string, { email: string; email_verified: boolean }> = {
  ann: { email: 'Ann@Studio.example', email_verified: true },
  eve: { email: 'eve@elsewhere.example', email_verified: true },
  unverified: { email: 'ann@studio.example', email_verified: false },
};

let issuer: string;
let server: http.Server;
let t: TestService;
beforeAll(async () => {
  server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [{ ...CLIENT, redirect_uris: [`${PUBLIC_BASE_URL}/admin/v1/oidc/callback`], grant_types: ['authorization_code'], response_types: ['code'] }],
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    findAccount: async (_ctx, id) => (USERS[id] ? { accountId: id, claims: async () => ({ sub: id, ...USERS[id] }) } : undefined),
    // Consent is taken as given: the test signs in, it does not click through a consent page.
    loadExistingGrant: async (ctx) => {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId! });
      grant.addOIDCScope('openid email profile');
      await grant.save();
      return grant;
    },
    cookies: { keys: ['oidc-provider-test-cookie-key'] },
    ttl: { Interaction: 600, Grant: 600, Session: 600, AccessToken: 600, IdToken: 600 },
  });
  server.on('request', provider.callback());
  t = await startService({ env: { OIDC_ISSUER: issuer, OIDC_CLIENT_ID: CLIENT.client_id, OIDC_CLIENT_SECRET: CLIENT.client_secret, PUBLIC_BASE_URL } });
  await createAccount(t, 'ann@studio.example', 'finance', null);
}, 180_000);
afterAll(async () => {
  await t?.stop();
  server?.close();
});

/** Follows the browser's way: service -> provider (sign in as `user`) -> service's callback. */
async function signInThrough(user: string) {
  const start = await call(t, 'GET', '/admin/v1/oidc/start', {});
  expect(start.status).toBe(302);
  const flowCookie = (start.headers.get('set-cookie') as string).split(';')[0] as string;
  const jar = new Map<string, string>();
  const fetchProvider = async (url: string, init: RequestInit = {}) => {
    const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const [k, v] = (pair as string).split('=');
      jar.set(k as string, v as string);
    }
    return res;
  };
  let res = await fetchProvider(start.headers.get('location') as string);
  // The provider's own sign-in page (its development interactions): post the login form.
  while (res.status >= 300 && res.status < 400) {
    const next = new URL(res.headers.get('location') as string, issuer);
    if (next.href.startsWith(PUBLIC_BASE_URL)) return call(t, 'GET', next.pathname + next.search, { cookie: flowCookie });
    res = await fetchProvider(next.href);
    if (res.status === 200) {
      const html = await res.text();
      const action = /<form[^>]*action="([^"]+)"/.exec(html)![1] as string;
      const prompt = /name="prompt" value="([a-z]+)"/.exec(html)![1] as string;
      res = await fetchProvider(new URL(action, issuer).href, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ prompt, login: user, password: 'any' }).toString(),
      });
    }
  }
  throw new Error(`the provider answered ${res.status}: ${await res.text()}`);
}

describe('OpenID Connect sign-in', () => {
  it('signs an account in by its verified email: a session cookie, then the console', async () => {
    const back = await signInThrough('ann');
    expect(back.status, back.text).toBe(302);
    expect(back.headers.get('location')).toBe('/console/');
    const cookies = back.headers.getSetCookie();
    const session = cookies.find((c) => c.startsWith('combo_session='))!;
    expect(session).toMatch(/; HttpOnly; SameSite=Strict$/);
    const me = await call(t, 'GET', '/admin/v1/me', { cookie: session.split(';')[0] as string });
    expect(me.body).toMatchObject({ kind: 'account', actor: 'ann@studio.example', role: 'finance' });
    const sessions = await call(t, 'GET', '/admin/v1/me/sessions', { cookie: session.split(';')[0] as string });
    expect(sessions.body.data[0].method).toBe('oidc');
  });

  it('refuses an email with no account, and an email the provider does not vouch for (403)', async () => {
    const eve = await signInThrough('eve');
    expect(eve.status).toBe(403);
    expect(eve.body.message).toMatch(/no operator account/);
    expect(eve.headers.get('set-cookie') ?? '').not.toContain('combo_session=');
    const unverified = await signInThrough('unverified');
    expect(unverified.status).toBe(403);
  });

  it('refuses a callback without the flow started in this browser (401)', async () => {
    const r = await call(t, 'GET', '/admin/v1/oidc/callback?code=x&state=y', {});
    expect(r.status).toBe(401);
  });
});
