import * as OTPAuth from 'otpauth';
import { recordAudit } from '../admin/audit.js';
import { Errors } from '../errors.js';
import { addressGroup } from '../lib/address-group.js';
import type { Clock } from '../lib/clock.js';
import { prefixedId, type IdGenerator } from '../lib/ids.js';
import { isPromise, type MaybePromise } from '../lib/maybe-promise.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { RateLimiter, RateLimitPolicy, TakeResult } from '../ratelimit/limiter.js';
import type { Caller, Principal, Role } from './roles.js';
import { normalEmail, parseGames, toOperator } from './service.js';
import { csrfTokenOf, hashPassword, newToken, tokenHash, verifyPassword } from './secrets.js';
import type { OperatorRow, OperatorStore, SessionRow } from './store.js';

export interface SignInSettings {
  /** OPERATOR_SESSION_IDLE_MINUTES: a session unused this long ends. */
  sessionIdleMs: number;
  /** OPERATOR_SIGN_IN_FAILURES_PER_HOUR: wrong passwords (and TOTP codes) per account. */
  failuresPerAccount: number;
  /** OPERATOR_SIGN_IN_FAILURES_PER_HOUR_PER_ADDRESS: wrong sign-ins per client address. */
  failuresPerAddress: number;
}

export interface SignInDeps {
  store: OperatorStore;
  clock: Clock;
  ids: IdGenerator;
  secrets: SecretBox;
  limiter: RateLimiter;
  settings: SignInSettings;
  onLimited?(policy: RateLimitPolicy): void;
}

/** Where a sign-in comes from (stored with the session, shown in the account's session list). */
export interface Origin {
  address: string;
  userAgent: string;
}

/** A started console session: the cookie's value and its CSRF token. */
export interface StartedSession {
  token: string;
  session: SessionRow;
  operator: OperatorRow;
  csrfToken: string;
}

/** Sessions touched less often than this keep their last_seen_at (one write a minute at most). */
const TOUCH_EVERY_MS = 60_000;
const WRONG = 'email or password is wrong';
const TOTP_USED = 'this TOTP code was used already: wait for the next one';
/** Only so many seconds' codes either side of now are taken (clock drift of the phone). */
const TOTP_WINDOW = 1;

const hourly = (key: string, n: number): RateLimitPolicy => ({ key, perSecond: n / 3600, burst: n });

/**
 * Sign-in with email, password and TOTP; console sessions (idle expiry, revocation); TOTP
 * enrolment; API keys as credentials. Wrong passwords and codes are limited per account and
 * per address (operators.md 1) in the rate limiter's buckets, shared by all instances when
 * REDIS_URL is set.
 */
export class SignInService {
  constructor(private readonly d: SignInDeps) {}

  private accountPolicy = (email: string) => hourly(`operator-sign-in:${email}`, this.d.settings.failuresPerAccount);
  private addressPolicy = (address: string) => hourly(`operator-sign-in-address:${addressGroup(address)}`, this.d.settings.failuresPerAddress);

  /** Refuses (429) when any of the buckets is empty; takes one token of each when `take`. */
  private async limit(policies: RateLimitPolicy[], take: boolean): Promise<void> {
    const results = await Promise.all(policies.map((p) => (take ? this.d.limiter.take(p) : this.d.limiter.peek(p)) as MaybePromise<TakeResult>).map((r) => (isPromise(r) ? r : Promise.resolve(r))));
    const refused = results.findIndex((r) => !r.allowed);
    if (refused < 0 || take) return;
    this.d.onLimited?.(policies[refused]!);
    const retryAfter = Math.max(1, Math.ceil(results[refused]!.retryAfterMs / 1000));
    throw Errors.rateLimited(`too many failed sign-ins; retry after ${retryAfter} s`, { 'retry-after': String(retryAfter) });
  }

  async signIn(emailRaw: string, password: string, totp: string | undefined, origin: Origin): Promise<StartedSession> {
    const { store } = this.d;
    const email = normalEmail(emailRaw);
    const policies = [this.accountPolicy(email), this.addressPolicy(origin.address)];
    await this.limit(policies, false);
    const row = await store.findByEmail(store.db, email);
    const ok = await verifyPassword(password, row?.password_hash ?? null);
    if (!row || !ok || row.disabled_at !== null) {
      await this.limit(policies, true);
      throw Errors.unauthorized(WRONG);
    }
    let totpStep: number | undefined;
    if (row.totp_enabled_at !== null) {
      if (totp === undefined) throw Errors.totpRequired('this account needs its TOTP code (totp)');
      const step = this.totpStep(row, totp);
      if (step === null || (row.totp_last_step !== null && step <= row.totp_last_step)) {
        await this.limit(policies, true);
        throw Errors.unauthorized(step === null ? 'the TOTP code is wrong' : TOTP_USED);
      }
      totpStep = step;
    }
    return this.startSession(row, 'password', origin, totpStep);
  }

  /** Signs in an account found by an identity provider's verified email (OIDC). */
  async signInByEmail(emailRaw: string, origin: Origin): Promise<StartedSession> {
    const row = await this.d.store.findByEmail(this.d.store.db, normalEmail(emailRaw));
    if (!row || row.disabled_at !== null) throw Errors.forbidden('no operator account has this email: ask an admin to invite you');
    return this.startSession(row, 'oidc', origin);
  }

  /** `totpStep`: the time step of the TOTP code the sign-in gave, taken once (a concurrent sign-in with it is refused). */
  private async startSession(row: OperatorRow, method: 'password' | 'oidc', origin: Origin, totpStep?: number): Promise<StartedSession> {
    const { store, clock, ids } = this.d;
    const now = clock.now();
    const token = newToken('ses_');
    const session: SessionRow = {
      session_id: prefixedId('osn', ids),
      token_hash: tokenHash(token),
      operator_id: row.operator_id,
      created_at: now,
      last_seen_at: now,
      revoked_at: null,
      address: origin.address,
      user_agent: origin.userAgent.slice(0, 256),
      method,
    };
    await store.transaction(async (trx) => {
      if (totpStep !== undefined && !(await store.useTotpStep(trx, row.operator_id, totpStep))) throw Errors.unauthorized(TOTP_USED);
      await store.insertSession(trx, session);
      const by = { actor: row.email, address: origin.address };
      await recordAudit(trx, ids, now, { by, game: null, action: 'operator.sign_in', target: row.operator_id, detail: { method, session_id: session.session_id } });
    });
    return { token, session, operator: row, csrfToken: csrfTokenOf(token) };
  }

  /** The principal of a session cookie; null when it is unknown, revoked, idle too long or its account disabled. */
  async sessionPrincipal(token: string): Promise<{ principal: Principal; csrfToken: string } | null> {
    const { store, clock, settings } = this.d;
    const session = await store.findSession(store.db, tokenHash(token));
    const now = clock.now();
    if (!session || session.revoked_at !== null || now - session.last_seen_at >= settings.sessionIdleMs) return null;
    const row = await store.findOperator(store.db, session.operator_id);
    if (!row || row.disabled_at !== null) return null;
    if (now - session.last_seen_at >= TOUCH_EVERY_MS) await store.touchSession(store.db, session.session_id, now);
    return {
      principal: { kind: 'account', actor: row.email, role: row.role as Role, games: parseGames(row.games), operatorId: row.operator_id, sessionId: session.session_id },
      csrfToken: csrfTokenOf(token),
    };
  }

  /** The principal of an API key; null when unknown, revoked or expired. */
  async apiKeyPrincipal(key: string): Promise<Principal | null> {
    const { store, clock } = this.d;
    const row = await store.findApiKey(store.db, tokenHash(key));
    const now = clock.now();
    if (!row || row.revoked_at !== null || (row.expires_at !== null && row.expires_at <= now)) return null;
    if (row.last_used_at === null || now - row.last_used_at >= TOUCH_EVERY_MS) await store.touchApiKey(store.db, row.key_id, now);
    return { kind: 'api_key', actor: `api-key:${row.name}`, role: row.role as Role, games: parseGames(row.games), operatorId: null, sessionId: null };
  }

  async me(p: Principal) {
    const row = p.operatorId ? await this.d.store.findOperator(this.d.store.db, p.operatorId) : undefined;
    return row ? toOperator(row) : null;
  }

  private account(p: Principal): Promise<OperatorRow> {
    if (p.kind !== 'account' || !p.operatorId) throw Errors.forbidden('only an operator account signed in to the console has this');
    return this.d.store.findOperator(this.d.store.db, p.operatorId) as Promise<OperatorRow>;
  }

  async sessions(p: Principal) {
    const row = await this.account(p);
    const open = await this.d.store.listSessions(this.d.store.db, row.operator_id, this.d.clock.now() - this.d.settings.sessionIdleMs);
    return open.map(({ token_hash: _h, operator_id: _o, revoked_at: _r, ...s }) => ({ ...s, method: s.method as 'password' | 'oidc', current: s.session_id === p.sessionId }));
  }

  async revokeSession(p: Principal, sessionId: string): Promise<void> {
    const row = await this.account(p);
    if (!(await this.d.store.revokeSessions(this.d.store.db, row.operator_id, this.d.clock.now(), sessionId))) throw Errors.notFound(`session ${sessionId} not found`);
  }

  async changePassword(p: Caller, current: string, next: string): Promise<void> {
    const { store, clock, ids } = this.d;
    const row = await this.account(p);
    const policies = [this.accountPolicy(row.email)];
    await this.limit(policies, false);
    if (!(await verifyPassword(current, row.password_hash))) {
      await this.limit(policies, true);
      throw Errors.forbidden('current_password is wrong');
    }
    const hash = await hashPassword(next);
    const now = clock.now();
    await store.transaction(async (trx) => {
      await store.updateOperator(trx, row.operator_id, { password_hash: hash, updated_at: now });
      // Every other session ends: whoever knew the old password is signed out.
      for (const s of await store.listSessions(trx, row.operator_id, 0)) if (s.session_id !== p.sessionId) await store.revokeSessions(trx, row.operator_id, now, s.session_id);
      await recordAudit(trx, ids, now, { by: { actor: row.email, address: p.address }, game: null, action: 'operator.password', target: row.operator_id });
    });
  }

  private totp(row: OperatorRow, secret: string): OTPAuth.TOTP {
    return new OTPAuth.TOTP({ issuer: 'Combo platform', label: row.email, secret: OTPAuth.Secret.fromBase32(secret) });
  }

  /** The time step of a TOTP code of the account's secret (null: not a code of now, within TOTP_WINDOW). */
  private totpStep(row: OperatorRow, code: string): number | null {
    if (!row.totp_secret) return null;
    const totp = this.totp(row, this.d.secrets.open(row.totp_secret));
    const timestamp = this.d.clock.now();
    const delta = totp.validate({ token: code, timestamp, window: TOTP_WINDOW });
    return delta === null ? null : totp.counter({ timestamp }) + delta;
  }

  /** Starts TOTP enrolment: a new secret, in force once a code from it is verified. */
  async startTotp(p: Principal): Promise<{ secret: string; otpauth_url: string }> {
    const { store, clock, secrets } = this.d;
    const row = await this.account(p);
    if (row.totp_enabled_at !== null) throw Errors.conflict('TOTP is on for this account: turn it off first');
    const secret = new OTPAuth.Secret({ size: 20 }).base32;
    await store.updateOperator(store.db, row.operator_id, { totp_secret: secrets.seal(secret), updated_at: clock.now() });
    return { secret, otpauth_url: this.totp(row, secret).toString() };
  }

  async verifyTotp(p: Caller, code: string): Promise<void> {
    const { store, clock, ids } = this.d;
    const row = await this.account(p);
    if (!row.totp_secret || row.totp_enabled_at !== null) throw Errors.conflict('start TOTP enrolment first (POST /admin/v1/me/totp)');
    const policies = [hourly(`operator-totp:${row.operator_id}`, this.d.settings.failuresPerAccount)];
    await this.limit(policies, false);
    const step = this.totpStep(row, code);
    if (step === null) {
      await this.limit(policies, true);
      throw Errors.forbidden('the TOTP code is wrong');
    }
    const now = clock.now();
    await store.transaction(async (trx) => {
      // The enrolment's code is taken: it cannot also sign in.
      await store.updateOperator(trx, row.operator_id, { totp_enabled_at: now, totp_last_step: step, updated_at: now });
      await recordAudit(trx, ids, now, { by: { actor: row.email, address: p.address }, game: null, action: 'operator.totp.enable', target: row.operator_id });
    });
  }

  async removeTotp(p: Caller): Promise<void> {
    const { store, clock, ids } = this.d;
    const row = await this.account(p);
    const now = clock.now();
    await store.transaction(async (trx) => {
      await store.updateOperator(trx, row.operator_id, { totp_secret: null, totp_enabled_at: null, totp_last_step: null, updated_at: now });
      await recordAudit(trx, ids, now, { by: { actor: row.email, address: p.address }, game: null, action: 'operator.totp.disable', target: row.operator_id });
    });
  }

  async signOut(p: Principal): Promise<void> {
    if (p.kind === 'account' && p.sessionId && p.operatorId) await this.d.store.revokeSessions(this.d.store.db, p.operatorId, this.d.clock.now(), p.sessionId);
  }
}
