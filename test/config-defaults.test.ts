import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';

/** The defaults and bounds docs/configuration.md documents, read by loadConfig. */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-config-defaults-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig({ DATA_DIR: dir, ...env });
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  return [];
}

describe('docs/configuration.md: defaults', () => {
  it('with nothing set, each documented default is the one in effect', () => {
    const c = loadConfig({ DATA_DIR: dir });
    expect({
      SWEEP_INTERVAL_MS: c.sweepIntervalMs,
      GM_TIMEOUT_MS: c.gmTimeoutMs,
      ROLE_CACHE_TTL_SECONDS: c.roleCacheTtlMs / 1000,
      SESSION_TIMEOUT_SECONDS: c.sessionTimeoutMs / 1000,
      NOTIFY_RETRY_BASE_MS: c.notify.retryBaseMs,
      NOTIFY_MAX_AGE_SECONDS: c.notify.maxAgeMs / 1000,
      SHUTDOWN_TIMEOUT_MS: c.shutdownTimeoutMs,
      MAX_EVENT_LOOP_DELAY_MS: c.maxEventLoopDelayMs,
      NOTIFY_PER_HOST_CONCURRENCY: c.notify.perHostConcurrency,
      NOTIFY_PER_HOST_CONCURRENCY_MIN: c.notify.perHostMinConcurrency,
      NOTIFY_CONCURRENCY: c.notify.concurrency,
      NOTIFY_TIMEOUT_MS: c.notify.timeoutMs,
      NPPA_CONCURRENCY: c.nppa.concurrency,
      ALLOW_PRIVATE_NOTIFY_URLS: c.allowPrivateUrls,
      DATABASE_STATEMENT_TIMEOUT_MS: c.databaseStatementTimeoutMs,
      DATABASE_MIGRATION_LOCK_TIMEOUT_MS: c.databaseMigrationLockTimeoutMs,
    }).toEqual({
      SWEEP_INTERVAL_MS: 1000,
      GM_TIMEOUT_MS: 5000,
      ROLE_CACHE_TTL_SECONDS: 300,
      SESSION_TIMEOUT_SECONDS: 86_400,
      NOTIFY_RETRY_BASE_MS: 10_000,
      NOTIFY_MAX_AGE_SECONDS: 604_800,
      SHUTDOWN_TIMEOUT_MS: 10_000,
      MAX_EVENT_LOOP_DELAY_MS: 500,
      NOTIFY_PER_HOST_CONCURRENCY: 128,
      NOTIFY_PER_HOST_CONCURRENCY_MIN: 2,
      NOTIFY_CONCURRENCY: 256,
      NOTIFY_TIMEOUT_MS: 10_000,
      NPPA_CONCURRENCY: 16,
      ALLOW_PRIVATE_NOTIFY_URLS: false,
      DATABASE_STATEMENT_TIMEOUT_MS: 30_000,
      DATABASE_MIGRATION_LOCK_TIMEOUT_MS: 2000,
    });
  });
});

describe('docs/configuration.md: bounds', () => {
  it('SWEEP_INTERVAL_MS is 10..600000: 9 is refused by name, 10 accepted', () => {
    expect(problems({ SWEEP_INTERVAL_MS: '9' })).toEqual(['SWEEP_INTERVAL_MS must be an integer from 10 to 600000 (got "9")']);
    expect(loadConfig({ DATA_DIR: dir, SWEEP_INTERVAL_MS: '10' }).sweepIntervalMs).toBe(10);
  });

  it('NOTIFY_PER_HOST_CONCURRENCY_MIN is 1..1024 and at most NOTIFY_PER_HOST_CONCURRENCY; unset, 2 or the ceiling if lower', () => {
    expect(problems({ NOTIFY_PER_HOST_CONCURRENCY_MIN: '0' })).toEqual(['NOTIFY_PER_HOST_CONCURRENCY_MIN must be an integer from 1 to 1024 (got "0")']);
    expect(problems({ NOTIFY_PER_HOST_CONCURRENCY_MIN: '9', NOTIFY_PER_HOST_CONCURRENCY: '8' })).toEqual([
      'NOTIFY_PER_HOST_CONCURRENCY_MIN (9) must not exceed NOTIFY_PER_HOST_CONCURRENCY (8)',
    ]);
    expect(loadConfig({ DATA_DIR: dir, NOTIFY_PER_HOST_CONCURRENCY_MIN: '8', NOTIFY_PER_HOST_CONCURRENCY: '8' }).notify.perHostMinConcurrency).toBe(8);
    expect(loadConfig({ DATA_DIR: dir, NOTIFY_PER_HOST_CONCURRENCY: '1' }).notify.perHostMinConcurrency).toBe(1);
  });

  it('NOTIFY_TIMEOUT_MS is 100..60000: 99 is refused by name, 100 accepted', () => {
    expect(problems({ NOTIFY_TIMEOUT_MS: '99' })).toEqual(['NOTIFY_TIMEOUT_MS must be an integer from 100 to 60000 (got "99")']);
    expect(loadConfig({ DATA_DIR: dir, NOTIFY_TIMEOUT_MS: '100' }).notify.timeoutMs).toBe(100);
  });

  it('NPPA_CONCURRENCY is 1..1024: 1025 is refused by name, 1024 accepted', () => {
    expect(problems({ NPPA_CONCURRENCY: '1025' })).toEqual(['NPPA_CONCURRENCY must be an integer from 1 to 1024 (got "1025")']);
    expect(loadConfig({ DATA_DIR: dir, NPPA_CONCURRENCY: '1024' }).nppa.concurrency).toBe(1024);
  });

  it('ALLOW_PRIVATE_NOTIFY_URLS=yes is refused, naming the variable; 1 and true turn it on', () => {
    const p = problems({ ALLOW_PRIVATE_NOTIFY_URLS: 'yes' });
    expect(p).toHaveLength(1);
    expect(p[0]).toContain('ALLOW_PRIVATE_NOTIFY_URLS');
    expect(p[0]).toContain('"yes"');
    expect(loadConfig({ DATA_DIR: dir, ALLOW_PRIVATE_NOTIFY_URLS: '1' }).allowPrivateUrls).toBe(true);
    expect(loadConfig({ DATA_DIR: dir, ALLOW_PRIVATE_NOTIFY_URLS: 'true' }).allowPrivateUrls).toBe(true);
  });

  it('PUBLIC_BASE_URL=http://x/ is used as http://x (trailing slashes dropped: links append a path)', () => {
    expect(loadConfig({ DATA_DIR: dir, PUBLIC_BASE_URL: 'http://x/' }).publicBaseUrl).toBe('http://x');
    expect(loadConfig({ DATA_DIR: dir, PUBLIC_BASE_URL: 'https://pay.example.com/base//' }).publicBaseUrl).toBe('https://pay.example.com/base');
  });
});
