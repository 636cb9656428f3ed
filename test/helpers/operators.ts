import { expect } from 'vitest';
import { ADMIN_TOKEN, admin, type Answer, type TestService } from './service.js';

export const PASSWORD = 'correct horse battery staple';

/** A request with any headers, answered as the admin helper answers. */
export async function call(t: TestService, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Answer> {
  const res = await fetch(t.url + path, {
    method,
    redirect: 'manual',
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  const json = (res.headers.get('content-type') ?? '').startsWith('application/json') && text ? JSON.parse(text) : undefined;
  return { status: res.status, headers: res.headers, body: json, text };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** An operator account, invited by ADMIN_TOKEN and with its password set from the invitation. */
export async function createAccount(t: TestService, email: string, role: string, games?: string[] | null): Promise<{ operatorId: string }> {
  const created = await admin(t, 'POST', '/admin/v1/operators', { email, name: email.split('@')[0], role, ...(games === undefined ? {} : { games }) });
  expect(created.status, created.text).toBe(201);
  const accepted = await call(t, 'POST', `/admin/v1/invitations/${created.body.invitation.invitation_token}`, {}, { password: PASSWORD });
  expect(accepted.status, accepted.text).toBe(200);
  return { operatorId: created.body.operator_id };
}

/** A console session: the Cookie header to send and the CSRF token for writes. */
export interface Session {
  cookie: string;
  csrf: string;
  sessionId: string;
  setCookie: string;
}

export async function signIn(t: TestService, email: string, password = PASSWORD, totp?: string): Promise<Session> {
  const r = await call(t, 'POST', '/admin/v1/session', {}, { email, password, ...(totp ? { totp } : {}) });
  expect(r.status, r.text).toBe(200);
  const setCookie = r.headers.get('set-cookie') as string;
  return { cookie: setCookie.split(';')[0] as string, csrf: r.body.csrf_token, sessionId: r.body.session_id, setCookie };
}

/** Headers of a session's request: the cookie, and for writes its CSRF token. */
export const withSession = (s: Session, write = false): Record<string, string> => ({ cookie: s.cookie, ...(write ? { 'x-csrf-token': s.csrf } : {}) });

/** An API key of a role (and games), made with ADMIN_TOKEN. */
export async function apiKey(t: TestService, role: string, games?: string[]): Promise<string> {
  const r = await call(t, 'POST', '/admin/v1/api-keys', bearer(ADMIN_TOKEN), { name: `${role}-${games?.join('+') ?? 'all'}`, role, ...(games ? { games } : {}) });
  expect(r.status, r.text).toBe(201);
  return r.body.api_key as string;
}
