import { X509Certificate, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import ipaddr from 'ipaddr.js';
import { readOidc, type OidcConfig } from './oidc.js';

/** The longest SESSION_TIMEOUT_SECONDS may be (30 days). */
export const MAX_SESSION_TIMEOUT_SECONDS = 30 * 86_400;

/** PostgreSQL: a migration's lock wait per attempt, when DATABASE_MIGRATION_LOCK_TIMEOUT_MS is not set (ms). */
export const DEFAULT_MIGRATION_LOCK_TIMEOUT_MS = 2000;

/**
 * Service configuration, read from the environment once, at start, by `loadConfig` (never at
 * import time). Every bad value is reported with the variable's name; all problems are
 * collected so an operator fixes them in one go.
 */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string;
  /** true when ADMIN_TOKEN was not set and one was generated for this run. */
  adminTokenGenerated: boolean;
  adminToken: string;
  /** Operator accounts (operators.md 1; src/operators). */
  operators: {
    /** ADMIN_TOKEN_DISABLED: ADMIN_TOKEN is refused (accounts and API keys only). */
    adminTokenDisabled: boolean;
    /** OPERATOR_SESSION_IDLE_MINUTES, in ms. */
    sessionIdleMs: number;
    /** OPERATOR_COOKIE_SECURE; unset: on when TLS_CERT is set or PUBLIC_BASE_URL is https. */
    secure: boolean;
    failuresPerAccount: number;
    failuresPerAddress: number;
    authFailuresPerMinute: number;
    /** OIDC_*; null: no OpenID Connect sign-in. */
    oidc: OidcConfig | null;
  };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  tls: { cert: Buffer; key: Buffer } | null;
  publicBaseUrl: string;
  sqliteSynchronous: 'NORMAL' | 'FULL';
  /** SQLite: how often a worker thread checkpoints the WAL (ms; default 20); 0: SQLite's own, in the committing request. */
  sqliteCheckpointIntervalMs: number;
  /**
   * PostgreSQL: the longest a statement may run, or a transaction stay idle, before the server
   * ends it (ms; default 30000); 0: no limit. Migrations run without it.
   */
  databaseStatementTimeoutMs: number;
  /** PostgreSQL: how long a migration's attempt waits for a lock before it gives up and is tried again (ms); 0: without limit. */
  databaseMigrationLockTimeoutMs: number;
  /** 32-byte key that encrypts secret keys at rest; null: derive from a key file under ./data. */
  secretsKey: Buffer | null;
  dataDir: string;
  production: boolean;
  allowPrivateUrls: boolean;
  shutdownTimeoutMs: number;
  /** On SIGTERM, how long /readyz answers 503 (requests still served) before draining. */
  shutdownDelayMs: number;
  /** Overload protection (src/http/load-shedding.ts). */
  maxInflightRequests: number;
  /** The share (percent) of maxInflightRequests one client address may hold; 100: no bound of its own. */
  maxInflightPerClientPercent: number;
  /** An admitted request's body must arrive within this (ms) of its headers, else 408; 0: no limit. */
  bodyTimeoutMs: number;
  /** Target for admitted requests while saturated (ms); 0: the in-progress limit stays fixed. */
  admissionLatencyTargetMs: number;
  /** 0 disables shedding on event-loop delay. */
  maxEventLoopDelayMs: number;
  nodeId: number | null;
  /** APPLE_ROOT_CERTS: Apple's root certificates (DER), the anchors of App Store signatures; empty: no `apple` channel. */
  appleRootCerts: Buffer[];
  /** ALIPAY_GATEWAY_URL: Alipay's OpenAPI gateway (payments.md 2); tests point it at a stand-in. */
  alipayGatewayUrl: string;
  notify: {
    timeoutMs: number;
    maxAgeMs: number;
    concurrency: number;
    /** Ceiling of each notify_url host's adaptive limit of attempts in flight. */
    perHostConcurrency: number;
    /** Its floor. */
    perHostMinConcurrency: number;
    pollIntervalMs: number;
    /** First retry delay; each later one is 3x the previous, capped (docs/notifications.md). */
    retryBaseMs: number;
  };
  sweepIntervalMs: number;
  /** The scheduled reconciliation of the previous day (payments.md 6; docs/configuration.md). */
  reconcile: {
    /** RECONCILE_SCHEDULE: whether this instance runs it. */
    schedule: boolean;
    /** RECONCILE_HOUR: from this hour of the day, Beijing time (0-23). */
    hour: number;
  };
  sessionTimeoutMs: number;
  roleCacheTtlMs: number;
  roleStaleTtlMs: number;
  gmTimeoutMs: number;
  nppaBaseUrl: string;
  /** WeChat Pay API v3 (payments.md 2); tests point it at a local stand-in. */
  wechatpayBaseUrl: string;
  nppa: {
    /** How often the uploader looks for due behaviour events. */
    pollIntervalMs: number;
    /** First back-off after a national-system error; doubles per attempt up to a minute. */
    retryBaseMs: number;
    /** Pause of a game's uploads after answer 1006 (over the rate limit). */
    rateLimitPauseMs: number;
    /** Games one process uploads at the same time. */
    concurrency: number;
  };
  /** The `google` payment channel (docs/guides/payments.md). */
  google: {
    /** The Google Play Developer API's root URL. */
    apiBaseUrl: string;
    /** The JWK set of the keys that sign Pub/Sub push tokens. */
    pushJwksUrl: string;
    /** Each call to Google (API, token, keys) ends after this, answered as unavailable. */
    timeoutMs: number;
  };
  redisUrl: string | null;
  /** Prefix of every Redis key the service writes (several deployments may share a Redis). */
  redisKeyPrefix: string;
  /** The previous SECRETS_KEY during a key rotation: still accepted for decryption. */
  secretsKeyPrevious: Buffer | null;
  /** Per-IP rate of the client purchase API (PROTOCOL 10). */
  clientRateLimitPerSecond: number;
  /** Wrong admin tokens an address may present per minute before it is refused 429; 0: no limit. */
  adminAuthFailuresPerMinute: number;
  /** Bearer token required on GET /metrics; null: /metrics is open. */
  metricsToken: string | null;
  /** Fastify trustProxy: false, true, a hop count, or proxy addresses/CIDRs. */
  trustProxy: boolean | number | string[];
  /** Settings that are valid but probably not what the operator meant; logged at start. */
  warnings: string[];
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * What the service itself needs beyond loadConfig (the CLI's migrate, backup and
 * rotate-secrets do not serve the operator API): in production, an ADMIN_TOKEN. A generated
 * one is printed once at start, fine on a laptop; in production that line goes to a log
 * store, and each instance would generate a different one.
 */
export function checkServiceConfig(config: Config): void {
  if (!config.production) return;
  const problems: string[] = [];
  if (config.adminTokenGenerated) problems.push('ADMIN_TOKEN must be set when NODE_ENV=production (openssl rand -base64 32)');
  // resolveSecretsKey refuses this too (for the CLI); said here, all problems are named at once.
  if (!config.secretsKey) problems.push('SECRETS_KEY must be set when NODE_ENV=production (openssl rand -base64 32)');
  if (problems.length) throw new ConfigError(problems);
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string, def: string) => {
    const v = env[name];
    return v === undefined || v === '' ? def : v;
  };
  const int = (name: string, def: number, min: number, max: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return def;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return def;
    }
    return Number(raw);
  };
  const oneOf = <T extends string>(name: string, def: T, values: readonly T[]): T => {
    const v = str(name, def);
    if (!values.includes(v as T)) {
      problems.push(`${name} must be one of ${values.join(', ')} (got "${v}")`);
      return def;
    }
    return v as T;
  };
  const flag = (name: string) => {
    const v = str(name, '0');
    if (!['0', '1', 'true', 'false'].includes(v)) problems.push(`${name} must be 0 or 1 (got "${v}")`);
    return v === '1' || v === 'true';
  };
  // A base URL: paths are appended to it, so a query, a fragment or a user name in it would
  // end up in the middle of every link (https://x/combo?a=1/checkout/...).
  const url = (name: string, def: string) => {
    const v = str(name, def);
    try {
      const u = new URL(v);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
      if (u.search || u.hash || v.includes('?') || v.includes('#') || u.username || u.password) {
        problems.push(`${name} must be a base URL without a query, a fragment or a user name (got "${v}")`);
      }
    } catch {
      problems.push(`${name} must be an absolute http(s) URL (got "${v}")`);
    }
    return v.replace(/\/+$/, '');
  };

  const dataDir = path.resolve(str('DATA_DIR', './data'));
  const port = int('PORT', 8080, 0, 65535);
  const host = str('HOST', '0.0.0.0');
  const databaseUrl = str('DATABASE_URL', `sqlite:${path.join(dataDir, 'combo.db')}`);
  if (!/^sqlite:.+/.test(databaseUrl) && !/^postgres(ql)?:\/\/.+/.test(databaseUrl)) {
    problems.push(`DATABASE_URL must be sqlite:<path> or postgres://... (got "${databaseUrl.replace(/:[^:@/]*@/, ':***@')}")`);
  } else if (databaseUrl.startsWith('postgres') && !URL.canParse(databaseUrl)) {
    // Shown without anything between "//" and the last "@": that may be a password.
    problems.push(`DATABASE_URL is not a valid URL (got "${databaseUrl.replace(/\/\/.*@/, '//***@')}"): percent-encode reserved characters (/ ? # @ :) in its user name and password`);
  }
  const adminTokenRaw = env.ADMIN_TOKEN ?? '';
  if (adminTokenRaw !== '' && adminTokenRaw.length < 16) problems.push('ADMIN_TOKEN must be at least 16 characters');
  const adminToken = adminTokenRaw || `adm_${randomBytes(24).toString('base64url')}`;

  let tls: Config['tls'] = null;
  const certPath = env.TLS_CERT;
  const keyPath = env.TLS_KEY;
  if (Boolean(certPath) !== Boolean(keyPath)) problems.push('TLS_CERT and TLS_KEY must be set together');
  else if (certPath && keyPath) {
    const read = (name: string, file: string): Buffer | null => {
      try {
        return readFileSync(file);
      } catch (e) {
        problems.push(`${name} could not be read (${file}): ${(e as Error).message}`);
        return null;
      }
    };
    const cert = read('TLS_CERT', certPath);
    const key = read('TLS_KEY', keyPath);
    if (cert && key) tls = { cert, key };
    if (tls) {
      try {
        createSecureContext(tls); // not PEM, or a key that does not belong to the certificate
      } catch (e) {
        problems.push(`TLS_CERT/TLS_KEY are not a matching PEM certificate and private key: ${(e as Error).message}`);
        tls = null;
      }
    }
  }

  const key32 = (name: string): Buffer | null => {
    if (!env[name]) return null;
    const k = Buffer.from(env[name] as string, 'base64');
    if (k.length === 32) return k;
    problems.push(`${name} must be 32 bytes, base64-encoded (openssl rand -base64 32)`);
    return null;
  };
  const secretsKey = key32('SECRETS_KEY');
  const secretsKeyPrevious = key32('SECRETS_KEY_PREVIOUS');
  if (secretsKeyPrevious && !env.SECRETS_KEY) problems.push('SECRETS_KEY_PREVIOUS needs SECRETS_KEY (the new key) to be set');

  const redisUrl = env.REDIS_URL || null;
  if (redisUrl && !/^rediss?:\/\/.+/.test(redisUrl)) problems.push('REDIS_URL must be redis://host:port[/db] or rediss://...');
  const metricsToken = env.METRICS_TOKEN || null;
  if (metricsToken && metricsToken.length < 16) problems.push('METRICS_TOKEN must be at least 16 characters');
  const trustProxy = parseTrustProxy(str('TRUST_PROXY', '0'));
  if (trustProxy === null) problems.push('TRUST_PROXY must be 0, 1/true, a hop count "hops:<n>", or comma-separated proxy addresses/CIDRs');

  const oidc = readOidc(env, url, problems);

  const warnings: string[] = [];
  const nodeEnv = str('NODE_ENV', 'development');
  if (!['production', 'development', 'test'].includes(nodeEnv)) {
    warnings.push(`NODE_ENV is "${nodeEnv}", not "production": the production rules (ADMIN_TOKEN and SECRETS_KEY required, internal URLs refused) are off`);
  }

  const nodeIdRaw = env.NODE_ID;
  const nodeId = nodeIdRaw === undefined || nodeIdRaw === '' ? null : int('NODE_ID', 0, 0, 1023);

  const config: Config = {
    port,
    host,
    databaseUrl,
    adminToken,
    adminTokenGenerated: adminTokenRaw === '',
    operators: {
      adminTokenDisabled: flag('ADMIN_TOKEN_DISABLED'),
      sessionIdleMs: int('OPERATOR_SESSION_IDLE_MINUTES', 720, 1, 30 * 1440) * 60_000,
      secure: env.OPERATOR_COOKIE_SECURE ? flag('OPERATOR_COOKIE_SECURE') : tls !== null || str('PUBLIC_BASE_URL', '').startsWith('https:'),
      failuresPerAccount: int('OPERATOR_SIGN_IN_FAILURES_PER_HOUR', 10, 1, 1_000_000),
      failuresPerAddress: int('OPERATOR_SIGN_IN_FAILURES_PER_HOUR_PER_ADDRESS', 100, 1, 1_000_000),
      authFailuresPerMinute: int('ADMIN_AUTH_FAILURES_PER_MINUTE', 10, 0, 1_000_000),
      oidc,
    },
    logLevel: oneOf('LOG_LEVEL', 'info', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    tls,
    publicBaseUrl: url('PUBLIC_BASE_URL', `${tls ? 'https' : 'http'}://localhost:${port}`),
    sqliteSynchronous: oneOf('SQLITE_SYNCHRONOUS', 'NORMAL', ['NORMAL', 'FULL'] as const),
    sqliteCheckpointIntervalMs: int('SQLITE_CHECKPOINT_INTERVAL_MS', 20, 0, 60_000),
    databaseStatementTimeoutMs: int('DATABASE_STATEMENT_TIMEOUT_MS', 30_000, 0, 3_600_000),
    databaseMigrationLockTimeoutMs: int('DATABASE_MIGRATION_LOCK_TIMEOUT_MS', DEFAULT_MIGRATION_LOCK_TIMEOUT_MS, 0, 600_000),
    secretsKey,
    dataDir,
    production: nodeEnv === 'production',
    allowPrivateUrls: flag('ALLOW_PRIVATE_NOTIFY_URLS'),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    shutdownDelayMs: int('SHUTDOWN_DELAY_MS', 0, 0, 600_000),
    maxInflightRequests: int('MAX_INFLIGHT_REQUESTS', 256, 1, 1_000_000),
    maxInflightPerClientPercent: int('MAX_INFLIGHT_PER_CLIENT_PERCENT', 25, 1, 100),
    bodyTimeoutMs: int('BODY_TIMEOUT_MS', 10_000, 0, 300_000),
    admissionLatencyTargetMs: int('ADMISSION_LATENCY_TARGET_MS', 0, 0, 60_000),
    maxEventLoopDelayMs: int('MAX_EVENT_LOOP_DELAY_MS', 500, 0, 60_000),
    nodeId,
    appleRootCerts: readCertificates('APPLE_ROOT_CERTS', env.APPLE_ROOT_CERTS ?? '', problems),
    alipayGatewayUrl: url('ALIPAY_GATEWAY_URL', 'https://openapi.alipay.com/gateway.do'),
    notify: {
      timeoutMs: int('NOTIFY_TIMEOUT_MS', 10_000, 100, 60_000),
      maxAgeMs: int('NOTIFY_MAX_AGE_SECONDS', 7 * 86_400, 1, 365 * 86_400) * 1000,
      concurrency: int('NOTIFY_CONCURRENCY', 256, 1, 4096),
      perHostConcurrency: int('NOTIFY_PER_HOST_CONCURRENCY', 128, 1, 1024),
      perHostMinConcurrency: int('NOTIFY_PER_HOST_CONCURRENCY_MIN', 2, 1, 1024),
      pollIntervalMs: int('NOTIFY_POLL_INTERVAL_MS', 1000, 10, 60_000),
      retryBaseMs: int('NOTIFY_RETRY_BASE_MS', 10_000, 1, 3_600_000),
    },
    sweepIntervalMs: int('SWEEP_INTERVAL_MS', 1000, 10, 600_000),
    reconcile: { schedule: oneOf('RECONCILE_SCHEDULE', 'on', ['on', 'off'] as const) === 'on', hour: int('RECONCILE_HOUR', 10, 0, 23) },
    sessionTimeoutMs: int('SESSION_TIMEOUT_SECONDS', 86_400, 60, MAX_SESSION_TIMEOUT_SECONDS) * 1000,
    roleCacheTtlMs: int('ROLE_CACHE_TTL_SECONDS', 300, 0, 86_400) * 1000,
    roleStaleTtlMs: int('ROLE_STALE_TTL_SECONDS', 3600, 0, 7 * 86_400) * 1000,
    gmTimeoutMs: int('GM_TIMEOUT_MS', 5000, 100, 60_000),
    nppaBaseUrl: url('NPPA_BASE_URL', 'https://api2.wlc.nppa.gov.cn'),
    wechatpayBaseUrl: url('WECHATPAY_BASE_URL', 'https://api.mch.weixin.qq.com').replace(/\/+$/, ''),
    nppa: {
      pollIntervalMs: int('NPPA_POLL_INTERVAL_MS', 1000, 10, 60_000),
      retryBaseMs: int('NPPA_RETRY_BASE_MS', 2000, 10, 600_000),
      rateLimitPauseMs: int('NPPA_RATE_LIMIT_PAUSE_MS', 60_000, 10, 600_000),
      concurrency: int('NPPA_CONCURRENCY', 16, 1, 1024),
    },
    google: {
      apiBaseUrl: url('GOOGLE_API_BASE_URL', 'https://androidpublisher.googleapis.com'),
      pushJwksUrl: url('GOOGLE_PUSH_JWKS_URL', 'https://www.googleapis.com/oauth2/v3/certs'),
      timeoutMs: int('GOOGLE_API_TIMEOUT_MS', 10_000, 100, 60_000),
    },
    redisUrl,
    redisKeyPrefix: str('REDIS_KEY_PREFIX', 'combo:'),
    secretsKeyPrevious,
    clientRateLimitPerSecond: int('CLIENT_RATE_LIMIT_PER_SECOND', 20, 1, 1_000_000),
    adminAuthFailuresPerMinute: int('ADMIN_AUTH_FAILURES_PER_MINUTE', 10, 0, 1_000_000),
    metricsToken,
    trustProxy: trustProxy ?? false,
    warnings,
  };
  // Unset, the floor is 2 or the ceiling if that is lower; set, it must fit under the ceiling.
  if (!env.NOTIFY_PER_HOST_CONCURRENCY_MIN) config.notify.perHostMinConcurrency = Math.min(config.notify.perHostMinConcurrency, config.notify.perHostConcurrency);
  else if (config.notify.perHostMinConcurrency > config.notify.perHostConcurrency) {
    problems.push(`NOTIFY_PER_HOST_CONCURRENCY_MIN (${config.notify.perHostMinConcurrency}) must not exceed NOTIFY_PER_HOST_CONCURRENCY (${config.notify.perHostConcurrency})`);
  }
  if (problems.length) throw new ConfigError(problems);
  return config;
}

/**
 * Comma-separated paths of X.509 certificates, each DER or PEM (one certificate a file), read
 * as DER. A path that cannot be read or holds no certificate is a problem named with the
 * variable.
 */
function readCertificates(name: string, raw: string, problems: string[]): Buffer[] {
  const out: Buffer[] = [];
  for (const p of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    try {
      const bytes = readFileSync(p);
      const der = bytes.includes('-----BEGIN CERTIFICATE-----') ? pemToDer(bytes.toString('latin1')) : bytes;
      new X509Certificate(der);
      out.push(der);
    } catch (e) {
      problems.push(`${name}: ${p} is not a readable DER or PEM certificate (${(e as Error).message})`);
    }
  }
  return out;
}

function pemToDer(pem: string): Buffer {
  const m = /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(pem);
  return Buffer.from((m?.[1] ?? '').replace(/\s+/g, ''), 'base64');
}

/** TRUST_PROXY: `0`/`false` (default), `1`/`true` (any proxy), `hops:<n>`, or `10.0.0.0/8,127.0.0.1`. */
function parseTrustProxy(v: string): boolean | number | string[] | null {
  if (v === '0' || v === 'false') return false;
  if (v === '1' || v === 'true') return true;
  const hops = /^hops:(\d{1,2})$/.exec(v);
  if (hops) return Number(hops[1]);
  const list = v.split(',').map((x) => x.trim()).filter(Boolean);
  // An address or a CIDR whose prefix fits it (proxy-addr throws at start on `10.0.0.0/99`).
  // net.isIP for the address part: ipaddr.js also takes inet_aton's forms (`10.0.0/8`).
  const valid = (x: string) => net.isIP(x.split('/')[0] as string) !== 0 && (!x.includes('/') || ipaddr.isValidCIDR(x));
  return list.length && list.every(valid) ? list : null;
}
