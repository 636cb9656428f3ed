import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, checkServiceConfig, loadConfig } from '../../src/config/index.js';

const base = { DATA_DIR: '/tmp/combo-config-test', ADMIN_TOKEN: 'x'.repeat(16) };
const load = (env: Record<string, string>) => loadConfig({ ...base, ...env });
const problem = (env: Record<string, string>): string => {
  try {
    load(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    throw e;
  }
  return '';
};

describe('production settings', () => {
  it('the service needs ADMIN_TOKEN and SECRETS_KEY in production, both named at once (outside it, one is generated)', () => {
    const env = { DATA_DIR: '/tmp/combo-config-test' };
    const key = randomBytes(32).toString('base64');
    const serviceProblems = (over: Record<string, string>): string[] => {
      try {
        checkServiceConfig(loadConfig({ ...env, ...over }));
        return [];
      } catch (e) {
        return (e as ConfigError).problems;
      }
    };
    expect(serviceProblems({ NODE_ENV: 'production' })).toEqual([
      'ADMIN_TOKEN must be set when NODE_ENV=production (openssl rand -base64 32)',
      'SECRETS_KEY must be set when NODE_ENV=production (openssl rand -base64 32)',
    ]);
    expect(serviceProblems({ NODE_ENV: 'production', SECRETS_KEY: key })).toEqual([expect.stringMatching(/^ADMIN_TOKEN must be set/)]);
    expect(serviceProblems({ NODE_ENV: 'production', ADMIN_TOKEN: 'x'.repeat(16) })).toEqual([expect.stringMatching(/^SECRETS_KEY must be set/)]);
    expect(serviceProblems({})).toEqual([]);
    expect(serviceProblems({ NODE_ENV: 'production', ADMIN_TOKEN: 'x'.repeat(16), SECRETS_KEY: key })).toEqual([]);
  });

  it('NODE_ENV other than production, development or test: a warning that the production rules are off', () => {
    expect(load({}).warnings).toEqual([]);
    for (const v of ['production', 'development', 'test']) expect(load({ NODE_ENV: v }).warnings).toEqual([]);
    for (const v of ['prod', 'Production', 'staging']) {
      const c = load({ NODE_ENV: v });
      expect(c.production).toBe(false);
      expect(c.warnings).toEqual([`NODE_ENV is "${v}", not "production": the production rules (ADMIN_TOKEN and SECRETS_KEY required, internal URLs refused) are off`]);
    }
  });

  it('CLIENT_RATE_LIMIT_PER_SECOND: default 20, 1..1000000', () => {
    expect(load({}).clientRateLimitPerSecond).toBe(20);
    expect(problem({ CLIENT_RATE_LIMIT_PER_SECOND: '0' })).toContain('CLIENT_RATE_LIMIT_PER_SECOND must be an integer from 1 to 1000000');
    expect(load({ CLIENT_RATE_LIMIT_PER_SECOND: '1' }).clientRateLimitPerSecond).toBe(1);
    expect(load({ CLIENT_RATE_LIMIT_PER_SECOND: '1000000' }).clientRateLimitPerSecond).toBe(1_000_000);
    expect(problem({ CLIENT_RATE_LIMIT_PER_SECOND: '1000001' })).toContain('CLIENT_RATE_LIMIT_PER_SECOND');
    expect(problem({ CLIENT_RATE_LIMIT_PER_SECOND: '2.5' })).toContain('CLIENT_RATE_LIMIT_PER_SECOND');
  });

  it('ADMIN_AUTH_FAILURES_PER_MINUTE: default 10, 0 (no limit)..1000000', () => {
    expect(load({}).adminAuthFailuresPerMinute).toBe(10);
    expect(problem({ ADMIN_AUTH_FAILURES_PER_MINUTE: '-1' })).toContain('ADMIN_AUTH_FAILURES_PER_MINUTE must be an integer from 0 to 1000000');
    expect(load({ ADMIN_AUTH_FAILURES_PER_MINUTE: '0' }).adminAuthFailuresPerMinute).toBe(0);
    expect(load({ ADMIN_AUTH_FAILURES_PER_MINUTE: '1000000' }).adminAuthFailuresPerMinute).toBe(1_000_000);
    expect(problem({ ADMIN_AUTH_FAILURES_PER_MINUTE: '1000001' })).toContain('ADMIN_AUTH_FAILURES_PER_MINUTE');
    expect(problem({ ADMIN_AUTH_FAILURES_PER_MINUTE: '2.5' })).toContain('ADMIN_AUTH_FAILURES_PER_MINUTE');
  });

  it('METRICS_TOKEN: unset means open, else at least 16 characters', () => {
    expect(load({}).metricsToken).toBeNull();
    expect(problem({ METRICS_TOKEN: 'y'.repeat(15) })).toContain('METRICS_TOKEN must be at least 16 characters');
    expect(load({ METRICS_TOKEN: 'y'.repeat(16) }).metricsToken).toBe('y'.repeat(16));
  });

  it('OIDC_*: the three set together, the issuer https (http on loopback only), OIDC_DISPLAY_NAME 1-64 printable characters (default: the issuer host)', () => {
    const oidc = { OIDC_ISSUER: 'https://login.example.com/tenant', OIDC_CLIENT_ID: 'console', OIDC_CLIENT_SECRET: 's3cret' };
    expect(load({}).operators.oidc).toBeNull();
    expect(load(oidc).operators.oidc).toEqual({ issuer: oidc.OIDC_ISSUER, clientId: 'console', clientSecret: 's3cret', displayName: 'login.example.com' });
    for (const missing of ['OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET'] as const) {
      expect(problem({ ...oidc, [missing]: '' })).toContain('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together');
    }
    expect(problem({ ...oidc, OIDC_ISSUER: 'http://login.example.com' })).toContain('OIDC_ISSUER must be https (http only on a loopback address)');
    expect(problem({ ...oidc, OIDC_ISSUER: 'login.example.com' })).toContain('OIDC_ISSUER must be an absolute http(s) URL');
    expect(load({ ...oidc, OIDC_ISSUER: 'http://127.0.0.1:9000/' }).operators.oidc?.displayName).toBe('127.0.0.1:9000');

    const named = (name: string) => load({ ...oidc, OIDC_DISPLAY_NAME: name }).operators.oidc?.displayName;
    expect(named('S')).toBe('S');
    expect(named('Studio Google Workspace')).toBe('Studio Google Workspace');
    expect(named('企业微信')).toBe('企业微信');
    expect(named('x'.repeat(64))).toBe('x'.repeat(64));
    const refused = 'OIDC_DISPLAY_NAME must be 1 to 64 printable characters';
    expect(problem({ ...oidc, OIDC_DISPLAY_NAME: 'x'.repeat(65) })).toContain(refused);
    expect(problem({ ...oidc, OIDC_DISPLAY_NAME: '   ' })).toContain(refused);
    expect(problem({ ...oidc, OIDC_DISPLAY_NAME: 'Okta\nSSO' })).toContain(refused);
    expect(problem({ ...oidc, OIDC_DISPLAY_NAME: 'Okta\u0000' })).toContain(refused);
    expect(problem({ OIDC_DISPLAY_NAME: 'Okta' })).toContain('OIDC_DISPLAY_NAME needs OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET');
  });

  it('SECRETS_KEY_PREVIOUS: 32 bytes base64, only together with SECRETS_KEY', () => {
    const k = randomBytes(32).toString('base64');
    expect(load({}).secretsKeyPrevious).toBeNull();
    expect(load({ SECRETS_KEY: k, SECRETS_KEY_PREVIOUS: k }).secretsKeyPrevious?.length).toBe(32);
    expect(problem({ SECRETS_KEY: k, SECRETS_KEY_PREVIOUS: randomBytes(31).toString('base64') })).toContain('SECRETS_KEY_PREVIOUS must be 32 bytes');
    expect(problem({ SECRETS_KEY: k, SECRETS_KEY_PREVIOUS: randomBytes(33).toString('base64') })).toContain('SECRETS_KEY_PREVIOUS must be 32 bytes');
    expect(problem({ SECRETS_KEY_PREVIOUS: k })).toContain('SECRETS_KEY_PREVIOUS needs SECRETS_KEY');
  });

  it('REDIS_URL and REDIS_KEY_PREFIX', () => {
    expect(load({}).redisUrl).toBeNull();
    expect(load({ REDIS_URL: 'redis://127.0.0.1:6379/2' }).redisUrl).toBe('redis://127.0.0.1:6379/2');
    expect(load({ REDIS_URL: 'rediss://cache.internal:6380' }).redisUrl).toBe('rediss://cache.internal:6380');
    expect(problem({ REDIS_URL: 'http://127.0.0.1:6379' })).toContain('REDIS_URL must be');
    expect(load({}).redisKeyPrefix).toBe('combo:');
    expect(load({ REDIS_KEY_PREFIX: 'prod-a:' }).redisKeyPrefix).toBe('prod-a:');
  });

  it('TRUST_PROXY: off by default; true, hop count or address list', () => {
    expect(load({}).trustProxy).toBe(false);
    expect(load({ TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(load({ TRUST_PROXY: 'hops:1' }).trustProxy).toBe(1);
    expect(load({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1', '::1']);
    expect(load({ TRUST_PROXY: '10.0.0.0/32,fd00::/128,0.0.0.0/0' }).trustProxy).toEqual(['10.0.0.0/32', 'fd00::/128', '0.0.0.0/0']);
    for (const bad of ['proxy.internal', 'hops:x', '10.0.0.0/33', '10.0.0.0/99', 'fd00::/129', '10.0.0/8', '1.2.3', '10.0.0.0/']) {
      expect(problem({ TRUST_PROXY: bad }), bad).toContain('TRUST_PROXY must be');
    }
  });
});
