import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { Errors } from '../errors.js';
import type { ApiApp } from '../http/route-info.js';
import { EmptyObject, responses } from '../http/errors-schema.js';
import type { Caller } from './roles.js';
import {
  AcceptInvitationBody, ApiKey, ApiKeyParams, CreateApiKeyBody, CreateOperatorBody, Invitation, InvitationInfo, InvitationParams, Me, NewApiKey, Operator,
  OperatorParams, OperatorWithInvitation, PasswordBody, PatchOperatorBody, SessionParams, SessionView, SignedIn, SignInBody, SignInOptions, TotpCodeBody, TotpSetup,
} from './schemas.js';
import { csrfTokenOfRequest, principalOf, sessionCookie, type CookieSettings } from './guard.js';
import type { AccountService } from './service.js';
import type { SignInService, StartedSession } from './sign-in.js';
import { toOperator } from './service.js';

const admin = { auth: 'admin' as const };
const none = { auth: 'none' as const };
const tags = ['admin'];
const ERRORS = [Errors.unauthorized, Errors.forbidden, Errors.notFound, Errors.rateLimited];
const Ok = Type.Object({});

/** The caller of an operator route, with its client address for the audit log. */
const me = (req: FastifyRequest): Caller => ({ ...principalOf(req)!, address: req.ip });
const origin = (req: FastifyRequest) => ({ address: req.ip, userAgent: String(req.headers['user-agent'] ?? '') });

/** Answers a new console session: its cookie, and its CSRF token in the body. */
export function sendSession(reply: FastifyReply, cookie: CookieSettings, s: StartedSession) {
  reply.header('set-cookie', sessionCookie(cookie, s.token));
  reply.header('cache-control', 'no-store');
  return { operator: toOperator(s.operator), session_id: s.session.session_id, csrf_token: s.csrfToken };
}

/** Sign-in, the caller's own account, operator accounts, invitations and API keys (operators.md 1). */
export function registerOperatorRoutes(app: ApiApp, accounts: AccountService, signIn: SignInService, cookie: CookieSettings, options: SignInOptions): void {
  app.get('/admin/v1/sign-in-options', {
    config: none,
    schema: { tags, summary: 'How the console may sign in: password, the OpenID Connect provider, ADMIN_TOKEN', response: responses({ 200: SignInOptions }, []) },
    handler: async () => options,
  });
  app.post('/admin/v1/session', {
    config: none,
    schema: { tags, summary: 'Console sign-in with email and password (and TOTP): sets the session cookie', body: SignInBody, response: responses({ 200: SignedIn }, [Errors.unauthorized, Errors.totpRequired, Errors.rateLimited]) },
    handler: async (req, reply) => {
      const b = req.body;
      return sendSession(reply, cookie, await signIn.signIn(b.email, b.password, b.totp, origin(req)));
    },
  });
  app.delete('/admin/v1/session', {
    config: admin,
    schema: { tags, summary: 'Sign out: ends this console session and clears its cookie', response: responses({ 200: Ok }, ERRORS) },
    handler: async (req, reply) => {
      await signIn.signOut(me(req));
      reply.header('set-cookie', sessionCookie(cookie, '', true));
      return {};
    },
  });
  app.get('/admin/v1/me', {
    config: admin,
    schema: { tags, summary: 'Who the caller is: account, role, games, and the CSRF token of its console session', response: responses({ 200: Me }, ERRORS) },
    handler: async (req, reply) => {
      const p = me(req);
      reply.header('cache-control', 'no-store');
      return { kind: p.kind, actor: p.actor, role: p.role, games: p.games, operator: await signIn.me(p), session_id: p.sessionId, csrf_token: csrfTokenOfRequest(req) };
    },
  });
  app.get('/admin/v1/me/sessions', {
    config: admin,
    schema: { tags, summary: "The account's open console sessions", response: responses({ 200: Type.Object({ data: Type.Array(SessionView) }) }, ERRORS) },
    handler: async (req) => ({ data: await signIn.sessions(me(req)) }),
  });
  app.delete('/admin/v1/me/sessions/:session_id', {
    config: admin,
    schema: { tags, summary: 'Revoke one of the account’s sessions', params: SessionParams, response: responses({ 200: Ok }, ERRORS) },
    handler: async (req) => {
      await signIn.revokeSession(me(req), req.params.session_id);
      return {};
    },
  });
  app.put('/admin/v1/me/password', {
    config: admin,
    schema: { tags, summary: 'Change the password (other sessions end)', body: PasswordBody, response: responses({ 200: Ok }, ERRORS) },
    handler: async (req) => {
      const b = req.body;
      await signIn.changePassword(me(req), b.current_password, b.new_password);
      return {};
    },
  });
  app.post('/admin/v1/me/totp', {
    config: admin,
    schema: { tags, summary: 'Start TOTP enrolment: a new secret, in force once verified', body: EmptyObject, response: responses({ 200: TotpSetup }, [...ERRORS, Errors.conflict]) },
    handler: async (req) => signIn.startTotp(me(req)),
  });
  app.post('/admin/v1/me/totp/verify', {
    config: admin,
    schema: { tags, summary: 'Finish TOTP enrolment with a code: sign-in asks for codes from now on', body: TotpCodeBody, response: responses({ 200: Ok }, [...ERRORS, Errors.conflict]) },
    handler: async (req) => {
      await signIn.verifyTotp(me(req), req.body.code);
      return {};
    },
  });
  app.delete('/admin/v1/me/totp', {
    config: admin,
    schema: { tags, summary: 'Turn TOTP off for the account', response: responses({ 200: Ok }, ERRORS) },
    handler: async (req) => {
      await signIn.removeTotp(me(req));
      return {};
    },
  });

  app.post('/admin/v1/operators', {
    config: admin,
    schema: { tags, summary: 'Create an operator account: answers a one-time invitation link (72 h)', body: CreateOperatorBody, response: responses({ 201: OperatorWithInvitation }, [...ERRORS, Errors.conflict]) },
    handler: async (req, reply) => reply.code(201).send(await accounts.create(req.body, me(req))),
  });
  app.get('/admin/v1/operators', {
    config: admin,
    schema: { tags, summary: 'Operator accounts', response: responses({ 200: Type.Object({ data: Type.Array(Operator) }) }, ERRORS) },
    handler: async () => ({ data: await accounts.list() }),
  });
  app.get('/admin/v1/operators/:operator_id', {
    config: admin,
    schema: { tags, summary: 'An operator account', params: OperatorParams, response: responses({ 200: Operator }, ERRORS) },
    handler: async (req) => accounts.get(req.params.operator_id),
  });
  app.patch('/admin/v1/operators/:operator_id', {
    config: admin,
    schema: { tags, summary: "Change an account's name, role, games; disable or enable it", params: OperatorParams, body: PatchOperatorBody, response: responses({ 200: Operator }, ERRORS) },
    handler: async (req) => accounts.patch(req.params.operator_id, req.body, me(req)),
  });
  app.delete('/admin/v1/operators/:operator_id', {
    config: admin,
    schema: { tags, summary: 'Disable an account (its row and audit trail stay; its sessions end)', params: OperatorParams, response: responses({ 200: Operator }, ERRORS) },
    handler: async (req) => accounts.patch(req.params.operator_id, { disabled: true }, me(req)),
  });
  app.post('/admin/v1/operators/:operator_id/invitation', {
    config: admin,
    schema: { tags, summary: 'A new invitation link (earlier ones stop working): sets a new password', params: OperatorParams, body: EmptyObject, response: responses({ 201: Invitation }, ERRORS) },
    handler: async (req, reply) => reply.code(201).send(await accounts.reinvite(req.params.operator_id, me(req))),
  });

  app.get('/admin/v1/invitations/:token', {
    config: none,
    schema: { tags, summary: 'The account an invitation link is for (404: unknown, used or expired)', params: InvitationParams, response: responses({ 200: InvitationInfo }, [Errors.notFound]) },
    handler: async (req) => {
      const { row, expires_at } = await accounts.invitation(req.params.token);
      return { email: row.email, name: row.name, expires_at };
    },
  });
  app.post('/admin/v1/invitations/:token', {
    config: none,
    schema: { tags, summary: 'Accept an invitation: set the password (the link works once)', params: InvitationParams, body: AcceptInvitationBody, response: responses({ 200: Operator }, [Errors.notFound]) },
    handler: async (req) => accounts.accept(req.params.token, req.body.password, req.ip),
  });

  app.post('/admin/v1/api-keys', {
    config: admin,
    schema: { tags, summary: 'Create an API key (ak_..., shown once; never above the creator’s role)', body: CreateApiKeyBody, response: responses({ 201: NewApiKey }, ERRORS) },
    handler: async (req, reply) => reply.code(201).send(await accounts.createApiKey(req.body, me(req))),
  });
  app.get('/admin/v1/api-keys', {
    config: admin,
    schema: { tags, summary: 'API keys (never the keys themselves), with when each was last used', response: responses({ 200: Type.Object({ data: Type.Array(ApiKey) }) }, ERRORS) },
    handler: async () => ({ data: await accounts.listApiKeys() }),
  });
  app.delete('/admin/v1/api-keys/:key_id', {
    config: admin,
    schema: { tags, summary: 'Revoke an API key', params: ApiKeyParams, response: responses({ 200: Ok }, ERRORS) },
    handler: async (req) => {
      await accounts.revokeApiKey(req.params.key_id, me(req));
      return {};
    },
  });
}
