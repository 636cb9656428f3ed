/**
 * operators.md 1: console sign-in with OpenID Connect, against a real provider (the
 * `oidc-provider` package) on loopback: authorization code with PKCE, the account matched by
 * the provider's verified email, an unknown email refused.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcProvider, type OidcProvider } from './helpers/oidc-provider.js';
import { call, createAccount } from './helpers/operators.js';
import { startService, type TestService } from './helpers/service.js';

const PUBLIC_BASE_URL = 'http://console.example.test';

let issuer: string;
let provider: OidcProvider;
let t: TestService;
beforeAll(async () => {
  provider = await startOidcProvider(PUBLIC_BASE_URL);
  issuer = provider.issuer;
  t = await startService({ env: provider.env });
  await createAccount(t, 'ann@studio.example', 'finance', null);
}, 180_000);
afterAll(async () => {
  await t?.stop();
  provider?.close();
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
  it('is offered on the sign-in page: GET /admin/v1/sign-in-options names the provider', async () => {
    const r = await call(t, 'GET', '/admin/v1/sign-in-options', {});
    expect(r.body).toEqual({ password: true, oidc: { provider: new URL(issuer).host, start_url: '/admin/v1/oidc/start' }, admin_token: true });
  });

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
