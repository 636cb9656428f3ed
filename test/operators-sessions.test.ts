/**
 * operators.md 1: accounts from invitations, console sessions (cookie flags, CSRF, idle expiry,
 * revocation), sign-in limits, TOTP, API keys, ADMIN_TOKEN_DISABLED, and the audit log's actor.
 */
import * as OTPAuth from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { apiKey, bearer, call, createAccount, PASSWORD, signIn, withSession } from './helpers/operators.js';
import { ADMIN_TOKEN, admin, createGame, startService, type TestService } from './helpers/service.js';

const clock = new ManualClock(Date.now());
let t: TestService;
beforeAll(async () => {
  t = await startService({ clock, env: { OPERATOR_SIGN_IN_FAILURES_PER_HOUR: '3', OPERATOR_SESSION_IDLE_MINUTES: '60' } });
}, 180_000);
afterAll(async () => t?.stop());

let n = 0;
const email = (what: string) => `${what}-${++n}@studio.example`;

describe('invitations', () => {
  it('answer a one-time link valid 72 h; the link sets the password once', async () => {
    const e = email('inv');
    const created = await admin(t, 'POST', '/admin/v1/operators', { email: e, name: 'Ann', role: 'viewer' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email: e, role: 'viewer', games: null, status: 'invited' });
    const { invitation_token: token, invitation_url: url, expires_at } = created.body.invitation;
    expect(url).toMatch(new RegExp(`^http://localhost:\\d+/console/invite/${token}$`));
    expect(expires_at).toBe(clock.now() + 72 * 3600_000);
    expect((await call(t, 'GET', `/admin/v1/invitations/${token}`, {})).body).toEqual({ email: e, name: 'Ann', expires_at });
    expect((await call(t, 'POST', `/admin/v1/invitations/${token}`, {}, { password: 'short' })).status).toBe(400);
    expect((await call(t, 'POST', `/admin/v1/invitations/${token}`, {}, { password: PASSWORD })).body.status).toBe('active');
    expect((await call(t, 'POST', `/admin/v1/invitations/${token}`, {}, { password: PASSWORD })).status).toBe(404);
    expect((await call(t, 'GET', `/admin/v1/invitations/${token}`, {})).status).toBe(404);
    await signIn(t, e);
  });

  it('expire after 72 h; a new one replaces the old', async () => {
    const created = await admin(t, 'POST', '/admin/v1/operators', { email: email('late'), name: 'Bo', role: 'viewer' });
    const token = created.body.invitation.invitation_token as string;
    clock.advance(72 * 3600_000);
    expect((await call(t, 'POST', `/admin/v1/invitations/${token}`, {}, { password: PASSWORD })).status).toBe(404);
    const again = await admin(t, 'POST', `/admin/v1/operators/${created.body.operator_id}/invitation`, {});
    expect(again.status).toBe(201);
    expect((await call(t, 'POST', `/admin/v1/invitations/${again.body.invitation_token}`, {}, { password: PASSWORD })).status).toBe(200);
  });

  it('an email is one account (409); an admin cannot make an owner (403)', async () => {
    const e = email('dup');
    await createAccount(t, e, 'admin');
    expect((await admin(t, 'POST', '/admin/v1/operators', { email: e.toUpperCase(), name: 'x', role: 'viewer' })).status).toBe(409);
    const s = await signIn(t, e);
    const owner = await call(t, 'POST', '/admin/v1/operators', withSession(s, true), { email: email('o'), name: 'o', role: 'owner' });
    expect(owner.status).toBe(403);
  });
});

describe('console sessions', () => {
  it('are HttpOnly SameSite=Strict cookies (Secure with OPERATOR_COOKIE_SECURE or TLS); GET /admin/v1/me tells the CSRF token', async () => {
    const e = email('cookie');
    await createAccount(t, e, 'support');
    const s = await signIn(t, e);
    expect(s.setCookie).toMatch(/^combo_session=ses_[A-Za-z0-9_-]+; Path=\/; HttpOnly; SameSite=Strict$/);
    const me = await call(t, 'GET', '/admin/v1/me', withSession(s));
    expect(me.body).toMatchObject({ kind: 'account', actor: e, role: 'support', games: null, session_id: s.sessionId, csrf_token: s.csrf });
    expect(me.body.operator.email).toBe(e);
  });

  it('refuse a write without the CSRF token (403) and take it with it; reads need none', async () => {
    const e = email('csrf');
    await createAccount(t, e, 'admin');
    const s = await signIn(t, e);
    const game = await createGame(t);
    const patch = (headers: Record<string, string>) => call(t, 'PATCH', `/admin/v1/games/${game.gameId}`, headers, { name: 'renamed' });
    const none = await patch(withSession(s));
    expect(none.status).toBe(403);
    expect(none.body.message).toMatch(/X-CSRF-Token/);
    expect((await patch({ ...withSession(s), 'x-csrf-token': `${s.csrf}x` })).status).toBe(403);
    expect((await patch(withSession(s, true))).status).toBe(200);
    expect((await call(t, 'GET', `/admin/v1/games/${game.gameId}`, withSession(s))).status).toBe(200);
    // The audit log names the account, whatever X-Operator claims.
    await call(t, 'PATCH', `/admin/v1/games/${game.gameId}`, { ...withSession(s, true), 'x-operator': 'mallory' }, { name: 'again' });
    const audit = await admin(t, 'GET', `/admin/v1/audit?action=game.update&target=${game.gameId}`);
    expect(audit.body.data.map((a: { actor: string }) => a.actor)).toEqual([e, e]);
  });

  it('end after the idle time and when revoked or signed out', async () => {
    const e = email('idle');
    await createAccount(t, e, 'viewer');
    const s = await signIn(t, e);
    clock.advance(59 * 60_000);
    expect((await call(t, 'GET', '/admin/v1/me', withSession(s))).status).toBe(200);
    clock.advance(59 * 60_000); // idle from the last use, not from sign-in
    expect((await call(t, 'GET', '/admin/v1/me', withSession(s))).status).toBe(200);
    clock.advance(60 * 60_000);
    expect((await call(t, 'GET', '/admin/v1/me', withSession(s))).status).toBe(401);

    const one = await signIn(t, e);
    const two = await signIn(t, e);
    const list = await call(t, 'GET', '/admin/v1/me/sessions', withSession(one));
    expect(list.body.data.map((x: { session_id: string; current: boolean }) => [x.session_id, x.current])).toEqual([[two.sessionId, false], [one.sessionId, true]]);
    expect((await call(t, 'DELETE', `/admin/v1/me/sessions/${two.sessionId}`, withSession(one, true))).status).toBe(200);
    expect((await call(t, 'GET', '/admin/v1/me', withSession(two))).status).toBe(401);
    const out = await call(t, 'DELETE', '/admin/v1/session', withSession(one, true));
    expect(out.headers.get('set-cookie')).toMatch(/^combo_session=; .*Max-Age=0/);
    expect((await call(t, 'GET', '/admin/v1/me', withSession(one))).status).toBe(401);
  });

  it('end when the account is disabled; a disabled account cannot sign in', async () => {
    const e = email('off');
    const { operatorId } = await createAccount(t, e, 'viewer');
    const s = await signIn(t, e);
    const off = await admin(t, 'DELETE', `/admin/v1/operators/${operatorId}`);
    expect(off.body.status).toBe('disabled');
    expect((await call(t, 'GET', '/admin/v1/me', withSession(s))).status).toBe(401);
    expect((await call(t, 'POST', '/admin/v1/session', {}, { email: e, password: PASSWORD })).status).toBe(401);
  });
});

describe('sign-in limits', () => {
  it('lock an account after OPERATOR_SIGN_IN_FAILURES_PER_HOUR wrong passwords (429, the right one too), then refill', async () => {
    const e = email('guess');
    await createAccount(t, e, 'viewer');
    for (let i = 0; i < 3; i++) expect((await call(t, 'POST', '/admin/v1/session', {}, { email: e, password: 'wrong password!' })).status).toBe(401);
    const locked = await call(t, 'POST', '/admin/v1/session', {}, { email: e, password: PASSWORD });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
    clock.advance(20 * 60_000);
    expect((await call(t, 'POST', '/admin/v1/session', {}, { email: e, password: PASSWORD })).status).toBe(200);
  });

  it('count wrong TOTP codes the same way', async () => {
    const e = email('totp');
    await createAccount(t, e, 'viewer');
    const s = await signIn(t, e);
    const setup = await call(t, 'POST', '/admin/v1/me/totp', withSession(s, true), {});
    expect(setup.status).toBe(200);
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(setup.body.secret) });
    expect(setup.body.otpauth_url).toMatch(/^otpauth:\/\/totp\//);
    expect((await call(t, 'POST', '/admin/v1/me/totp/verify', withSession(s, true), { code: '000000' === totp.generate({ timestamp: clock.now() }) ? '111111' : '000000' })).status).toBe(403);
    expect((await call(t, 'POST', '/admin/v1/me/totp/verify', withSession(s, true), { code: totp.generate({ timestamp: clock.now() }) })).status).toBe(200);

    const noCode = await call(t, 'POST', '/admin/v1/session', {}, { email: e, password: PASSWORD });
    expect(noCode.status).toBe(401);
    expect(noCode.body.error).toBe('totp_required');
    // The enrolment's code is taken: sign-in takes the next step's.
    clock.advance(30_000);
    await signIn(t, e, PASSWORD, totp.generate({ timestamp: clock.now() }));
    const wrongCode = totp.generate({ timestamp: clock.now() + 3600_000 });
    for (let i = 0; i < 3; i++) expect((await call(t, 'POST', '/admin/v1/session', {}, { email: e, password: PASSWORD, totp: wrongCode })).status).toBe(401);
    expect((await call(t, 'POST', '/admin/v1/session', {}, { email: e, password: PASSWORD, totp: totp.generate({ timestamp: clock.now() }) })).status).toBe(429);
  });
});

describe('TOTP codes', () => {
  /** A new account with TOTP turned on; the code that turned it on. */
  async function enrolled(what: string): Promise<{ e: string; totp: OTPAuth.TOTP; enrolment: string }> {
    const e = email(what);
    await createAccount(t, e, 'viewer');
    const s = await signIn(t, e);
    const setup = await call(t, 'POST', '/admin/v1/me/totp', withSession(s, true), {});
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(setup.body.secret) });
    const enrolment = totp.generate({ timestamp: clock.now() });
    expect((await call(t, 'POST', '/admin/v1/me/totp/verify', withSession(s, true), { code: enrolment })).status).toBe(200);
    return { e, totp, enrolment };
  }
  const signInWith = (e: string, code: string) => call(t, 'POST', '/admin/v1/session', {}, { email: e, password: PASSWORD, totp: code });

  it('sign in once: the same code again within its window is refused (401); the next step’s is taken', async () => {
    const { e, totp, enrolment } = await enrolled('replay');
    // The code that turned TOTP on cannot sign in.
    expect((await signInWith(e, enrolment)).body).toEqual({ error: 'unauthorized', message: 'this TOTP code was used already: wait for the next one' });

    clock.advance(30_000);
    const code = totp.generate({ timestamp: clock.now() });
    expect((await signInWith(e, code)).status).toBe(200);
    // Still within its window, but taken.
    clock.advance(10_000);
    expect((await signInWith(e, code)).body.message).toBe('this TOTP code was used already: wait for the next one');
    clock.advance(30_000);
    expect((await signInWith(e, totp.generate({ timestamp: clock.now() }))).status).toBe(200);
  });

  it('taken by one of two sign-ins at once with the same code', async () => {
    const { e, totp } = await enrolled('race');
    clock.advance(30_000);
    const code = totp.generate({ timestamp: clock.now() });
    const both = await Promise.all([0, 1].map(() => signInWith(e, code)));
    expect(both.map((r) => r.status).sort()).toEqual([200, 401]);
  });
});

describe('API keys', () => {
  it('are shown once, stored hashed, record their last use, act with their role and are revocable', async () => {
    const created = await call(t, 'POST', '/admin/v1/api-keys', bearer(ADMIN_TOKEN), { name: 'deploy-bot', role: 'developer' });
    expect(created.status).toBe(201);
    const key = created.body.api_key as string;
    expect(key).toMatch(/^ak_[A-Za-z0-9_-]{43}$/);
    const rows = await t.service.database.db.selectFrom('operator_api_keys').selectAll().execute();
    expect(JSON.stringify(rows)).not.toContain(key);
    const game = await createGame(t);
    expect((await call(t, 'PATCH', `/admin/v1/games/${game.gameId}`, bearer(key), { name: 'by bot' })).status).toBe(200);
    expect((await call(t, 'POST', '/admin/v1/partners', bearer(key), {})).status).toBe(403);
    const listed = (await admin(t, 'GET', '/admin/v1/api-keys')).body.data.find((k: { key_id: string }) => k.key_id === created.body.key_id);
    expect(listed.last_used_at).toBe(clock.now());
    expect(JSON.stringify(listed)).not.toContain(key);
    const audit = await admin(t, 'GET', `/admin/v1/audit?action=game.update&target=${game.gameId}`);
    expect(audit.body.data[0].actor).toBe('api-key:deploy-bot');
    expect((await admin(t, 'DELETE', `/admin/v1/api-keys/${created.body.key_id}`)).status).toBe(200);
    expect((await call(t, 'GET', '/admin/v1/me', bearer(key))).status).toBe(401);
  });

  it('never above the creator’s role; expire at expires_at', async () => {
    const e = email('keys');
    await createAccount(t, e, 'admin');
    const s = await signIn(t, e);
    expect((await call(t, 'POST', '/admin/v1/api-keys', withSession(s, true), { name: 'x', role: 'owner' })).status).toBe(403);
    const soon = await call(t, 'POST', '/admin/v1/api-keys', withSession(s, true), { name: 'soon', role: 'viewer', expires_at: clock.now() + 60_000 });
    expect(soon.body.created_by).toBe(e);
    expect((await call(t, 'GET', '/admin/v1/me', bearer(soon.body.api_key))).body.actor).toBe('api-key:soon');
    clock.advance(60_000);
    expect((await call(t, 'GET', '/admin/v1/me', bearer(soon.body.api_key))).status).toBe(401);
    expect((await call(t, 'GET', '/admin/v1/me', bearer('ak_not-a-key'))).status).toBe(401);
    expect(await apiKey(t, 'viewer')).toMatch(/^ak_/);
  });
});

describe('sign-in options', () => {
  it('tell the console which ways to sign in are on, without a credential', async () => {
    const r = await call(t, 'GET', '/admin/v1/sign-in-options', {});
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ password: true, oidc: null, admin_token: true });
  });
});

describe('ADMIN_TOKEN', () => {
  it('is an owner recorded as ADMIN_TOKEN; ADMIN_TOKEN_DISABLED turns it off', async () => {
    expect((await admin(t, 'GET', '/admin/v1/me')).body).toMatchObject({ kind: 'token', actor: 'ADMIN_TOKEN', role: 'owner', games: null, operator: null });
    const off = await startService({ env: { ADMIN_TOKEN_DISABLED: '1' } });
    try {
      const r = await admin(off, 'GET', '/admin/v1/me');
      expect(r.status).toBe(401);
      expect(r.body.message).toMatch(/ADMIN_TOKEN_DISABLED/);
      // The console's sign-in page then offers no token form.
      expect((await call(off, 'GET', '/admin/v1/sign-in-options', {})).body).toEqual({ password: true, oidc: null, admin_token: false });
    } finally {
      await off.stop();
    }
  });
});
