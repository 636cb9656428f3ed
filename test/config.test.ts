import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { selfSignedCertificate } from './helpers/certificates.js';
import { TEST_DB } from './helpers/db.js';
import { startService } from './helpers/service.js';

/** Configuration from the environment (src/config): defaults, every bad value named, durability. */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'combo-config-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  return [];
}

describe('loadConfig', () => {
  it('has working defaults with nothing set, and generates an admin token', () => {
    const c = loadConfig({ DATA_DIR: dir });
    expect(c.port).toBe(8080);
    expect(c.host).toBe('0.0.0.0');
    expect(c.databaseUrl).toBe(`sqlite:${path.join(dir, 'combo.db')}`);
    expect(c.logLevel).toBe('info');
    expect(c.sqliteSynchronous).toBe('NORMAL');
    expect(c.sqliteCheckpointIntervalMs).toBe(20);
    expect(c.maxInflightRequests).toBe(256);
    expect(c.maxInflightPerClientPercent).toBe(25);
    expect(c.admissionLatencyTargetMs).toBe(0);
    expect(c.tls).toBeNull();
    expect(c.publicBaseUrl).toBe('http://localhost:8080');
    // PROTOCOL 5: a 2xx within 10 s; retried over 7 days by default.
    expect(c.notify.timeoutMs).toBe(10_000);
    expect(c.notify.maxAgeMs).toBe(7 * 86_400_000);
    expect(c.adminTokenGenerated).toBe(true);
    expect(c.adminToken).toMatch(/^adm_[A-Za-z0-9_-]{32}$/);
    expect(loadConfig({ DATA_DIR: dir }).adminToken).not.toBe(c.adminToken);
  });

  it.each([
    ['PORT', '0', 0],
    ['PORT', '65535', 65535],
    ['SQLITE_SYNCHRONOUS', 'FULL', 'FULL'],
    ['SQLITE_SYNCHRONOUS', 'NORMAL', 'NORMAL'],
    ['LOG_LEVEL', 'silent', 'silent'],
    ['LOG_LEVEL', 'debug', 'debug'],
    ['DATABASE_URL', 'postgres://u:p@db:5432/combo', 'postgres://u:p@db:5432/combo'],
    ['DATABASE_URL', 'postgresql://db/combo', 'postgresql://db/combo'],
    ['DATABASE_URL', 'sqlite:/var/lib/combo.db', 'sqlite:/var/lib/combo.db'],
    ['ADMIN_TOKEN', 'x'.repeat(16), 'x'.repeat(16)],
    ['ADMISSION_LATENCY_TARGET_MS', '0', 0],
    ['ADMISSION_LATENCY_TARGET_MS', '60000', 60_000],
    ['MAX_INFLIGHT_REQUESTS', '1', 1],
    ['MAX_INFLIGHT_REQUESTS', '1000000', 1_000_000],
    ['MAX_INFLIGHT_PER_CLIENT_PERCENT', '1', 1],
    ['MAX_INFLIGHT_PER_CLIENT_PERCENT', '100', 100],
    ['BODY_TIMEOUT_MS', '0', 0],
    ['BODY_TIMEOUT_MS', '300000', 300_000],
    ['SQLITE_CHECKPOINT_INTERVAL_MS', '0', 0],
    ['SQLITE_CHECKPOINT_INTERVAL_MS', '60000', 60_000],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '0', 0],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '1', 1],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '3600000', 3_600_000],
    ['DATABASE_MIGRATION_LOCK_TIMEOUT_MS', '0', 0],
    ['DATABASE_MIGRATION_LOCK_TIMEOUT_MS', '1', 1],
    ['DATABASE_MIGRATION_LOCK_TIMEOUT_MS', '600000', 600_000],
  ])('accepts %s=%s', (name, value, expected) => {
    const c = loadConfig({ DATA_DIR: dir, [name]: value });
    const field = {
      PORT: c.port,
      SQLITE_SYNCHRONOUS: c.sqliteSynchronous,
      LOG_LEVEL: c.logLevel,
      DATABASE_URL: c.databaseUrl,
      ADMIN_TOKEN: c.adminToken,
      ADMISSION_LATENCY_TARGET_MS: c.admissionLatencyTargetMs,
      MAX_INFLIGHT_REQUESTS: c.maxInflightRequests,
      MAX_INFLIGHT_PER_CLIENT_PERCENT: c.maxInflightPerClientPercent,
      BODY_TIMEOUT_MS: c.bodyTimeoutMs,
      SQLITE_CHECKPOINT_INTERVAL_MS: c.sqliteCheckpointIntervalMs,
      DATABASE_STATEMENT_TIMEOUT_MS: c.databaseStatementTimeoutMs,
      DATABASE_MIGRATION_LOCK_TIMEOUT_MS: c.databaseMigrationLockTimeoutMs,
    }[name];
    expect(field).toBe(expected);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '-1'],
    ['PORT', '65536'],
    ['PORT', '80.5'],
    ['PORT', ' 80'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'sqlite:'],
    ['DATABASE_URL', '/var/lib/combo.db'],
    ['DATABASE_URL', 'postgres://postgres:se/cr+et=@127.0.0.1:5432/x'],
    ['LOG_LEVEL', 'loud'],
    ['LOG_LEVEL', 'INFO'],
    ['SQLITE_SYNCHRONOUS', 'x'],
    ['SQLITE_SYNCHRONOUS', 'OFF'],
    ['SQLITE_SYNCHRONOUS', 'full'],
    ['ADMIN_TOKEN', 'x'.repeat(15)],
    ['SECRETS_KEY', Buffer.alloc(16).toString('base64')],
    ['SHUTDOWN_TIMEOUT_MS', 'soon'],
    ['NODE_ID', '1024'],
    ['PUBLIC_BASE_URL', 'ftp://x'],
    ['PUBLIC_BASE_URL', 'https://pay.example.com/combo?x=1'],
    ['PUBLIC_BASE_URL', 'https://pay.example.com/combo#top'],
    ['PUBLIC_BASE_URL', 'https://pay.example.com/combo?'],
    ['PUBLIC_BASE_URL', 'https://user:pw@pay.example.com'],
    ['ADMISSION_LATENCY_TARGET_MS', '-1'],
    ['ADMISSION_LATENCY_TARGET_MS', '60001'],
    ['ADMISSION_LATENCY_TARGET_MS', '50ms'],
    ['MAX_INFLIGHT_REQUESTS', '0'],
    ['MAX_INFLIGHT_REQUESTS', '1000001'],
    ['MAX_INFLIGHT_PER_CLIENT_PERCENT', '0'],
    ['MAX_INFLIGHT_PER_CLIENT_PERCENT', '101'],
    ['MAX_INFLIGHT_PER_CLIENT_PERCENT', '25%'],
    ['BODY_TIMEOUT_MS', '-1'],
    ['BODY_TIMEOUT_MS', '300001'],
    ['BODY_TIMEOUT_MS', '10s'],
    ['SQLITE_CHECKPOINT_INTERVAL_MS', '-1'],
    ['SQLITE_CHECKPOINT_INTERVAL_MS', '60001'],
    ['SQLITE_CHECKPOINT_INTERVAL_MS', '1s'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '-1'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '3600001'],
    ['DATABASE_STATEMENT_TIMEOUT_MS', '30s'],
    ['DATABASE_MIGRATION_LOCK_TIMEOUT_MS', '-1'],
    ['DATABASE_MIGRATION_LOCK_TIMEOUT_MS', '600001'],
    ['DATABASE_MIGRATION_LOCK_TIMEOUT_MS', '2s'],
  ])('refuses %s=%s and names it', (name, value) => {
    const p = problems({ DATA_DIR: dir, [name]: value });
    expect(p).toHaveLength(1);
    expect(p[0]).toContain(name);
  });

  it('a postgres DATABASE_URL that is not a URL (a / in its password) is named, without the password', () => {
    const [p] = problems({ DATA_DIR: dir, DATABASE_URL: 'postgres://postgres:se/cr+et=@127.0.0.1:5432/x' });
    expect(p).toContain('percent-encode');
    expect(p).not.toContain('cr+et');
  });

  it('TLS_CERT and TLS_KEY go together; unreadable files are named', () => {
    expect(problems({ DATA_DIR: dir, TLS_CERT: '/x/cert.pem' })[0]).toMatch(/TLS_CERT.*TLS_KEY/);
    expect(problems({ DATA_DIR: dir, TLS_KEY: '/x/key.pem' })[0]).toMatch(/TLS_CERT.*TLS_KEY/);
    expect(problems({ DATA_DIR: dir, TLS_CERT: '/x/cert.pem', TLS_KEY: '/x/key.pem' })).toEqual([
      expect.stringMatching(/^TLS_CERT could not be read \(\/x\/cert\.pem\): .*ENOENT/),
      expect.stringMatching(/^TLS_KEY could not be read \(\/x\/key\.pem\): .*ENOENT/),
    ]);
    // A directory where a file should be: named too.
    expect(problems({ DATA_DIR: dir, TLS_CERT: dir, TLS_KEY: '/x/key.pem' })[0]).toMatch(/^TLS_CERT could not be read .*EISDIR/);
  });

  it('reads TLS files when both are set', () => {
    const { cert, key } = selfSignedCertificate(dir, 'ok');
    const c = loadConfig({ DATA_DIR: dir, TLS_CERT: cert, TLS_KEY: key });
    expect(c.tls?.cert.toString()).toContain('BEGIN CERTIFICATE');
    // Links default to the scheme the port serves.
    expect(c.publicBaseUrl).toBe('https://localhost:8080');
  });

  it('refuses TLS files that are not PEM, or a key of another certificate, naming both variables', () => {
    const junk = path.join(dir, 'junk.pem');
    writeFileSync(junk, 'not a certificate\n');
    const p1 = problems({ DATA_DIR: dir, TLS_CERT: junk, TLS_KEY: junk });
    expect(p1).toHaveLength(1);
    expect(p1[0]).toMatch(/TLS_CERT\/TLS_KEY/);
    const a = selfSignedCertificate(dir, 'a');
    const b = selfSignedCertificate(dir, 'b');
    const p2 = problems({ DATA_DIR: dir, TLS_CERT: a.cert, TLS_KEY: b.key });
    expect(p2).toHaveLength(1);
    expect(p2[0]).toMatch(/TLS_CERT\/TLS_KEY/);
  });

  it('collects every problem at once', () => {
    const p = problems({ DATA_DIR: dir, PORT: 'abc', DATABASE_URL: 'mysql://x', LOG_LEVEL: 'loud', SQLITE_SYNCHRONOUS: 'x', TLS_CERT: '/x' });
    const text = p.join('\n');
    for (const name of ['PORT', 'DATABASE_URL', 'LOG_LEVEL', 'SQLITE_SYNCHRONOUS', 'TLS_CERT']) expect(text).toContain(name);
    expect(p).toHaveLength(5);
  });

  it('does not echo a password of a refused DATABASE_URL', () => {
    const p = problems({ DATA_DIR: dir, DATABASE_URL: 'mysql://user:hunter2@db/x' });
    expect(p[0]).toContain('DATABASE_URL');
    expect(p[0]).not.toContain('hunter2');
  });

  it('does not echo a refused ADMIN_TOKEN', () => {
    const p = problems({ DATA_DIR: dir, ADMIN_TOKEN: 'short-secret' });
    expect(p[0]).not.toContain('short-secret');
  });

  it('reads nothing at import time: a second call sees a changed environment', () => {
    expect(loadConfig({ DATA_DIR: dir, PORT: '1' }).port).toBe(1);
    expect(loadConfig({ DATA_DIR: dir, PORT: '2' }).port).toBe(2);
  });
});

describe.skipIf(TEST_DB !== 'sqlite')('SQLite durability settings', () => {
  it.each([
    ['FULL', 2],
    ['NORMAL', 1],
  ])('SQLITE_SYNCHRONOUS=%s is applied (PRAGMA synchronous = %i), in WAL mode', async (setting, expected) => {
    const t = await startService({ env: { SQLITE_SYNCHRONOUS: setting } });
    try {
      const db = t.service.database.db;
      const sync = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(db);
      expect(sync.rows[0]?.synchronous).toBe(expected);
      const mode = await sql<{ journal_mode: string }>`PRAGMA journal_mode`.execute(db);
      expect(mode.rows[0]?.journal_mode).toBe('wal');
      expect((await fetch(`${t.url}/readyz`)).status).toBe(200);
    } finally {
      await t.stop();
    }
  });
});

describe.skipIf(TEST_DB !== 'postgres')('PostgreSQL durability settings', () => {
  it('commits synchronously (synchronous_commit is on)', async () => {
    const t = await startService({ env: { SQLITE_SYNCHRONOUS: 'FULL' } });
    try {
      const r = await sql<{ synchronous_commit: string }>`SHOW synchronous_commit`.execute(t.service.database.db);
      expect(r.rows[0]?.synchronous_commit).toBe('on');
    } finally {
      await t.stop();
    }
  });
});
