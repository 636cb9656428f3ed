import { mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { logSink } from './helpers/logs.js';
import { until } from './helpers/receiver.js';
import { createGame, signed, startService, type TestService } from './helpers/service.js';
import { spawnService, type Spawned } from './helpers/spawn.js';

/**
 * The log tells the expected from the unexpected: a 5xx the code chose (501 for a Combo-only SDK
 * method) is a warning without a stack; only a 500 (a bug) is an error with its stack. And the
 * process writes nothing outside its JSON log for an HTTP/2 answer that ends its stream.
 */

describe('log level of 5xx answers', () => {
  let t: TestService;
  const sink = logSink();
  beforeAll(async () => {
    t = await startService({ env: { LOG_LEVEL: 'info' }, logDestination: sink.stream });
  });
  afterAll(async () => {
    await t?.stop();
  });

  it('501 not_implemented (an SDK calling sendOtp): one warn line naming it, no error line, no stack', async () => {
    const game = await createGame(t);
    const r = await signed(t, game, 'POST', '/v1/server/send-otp', { phone_number: '+8613800000000' });
    expect([r.status, r.body.error]).toEqual([501, 'not_implemented']);
    const traceId = r.headers.get('x-trace-id');
    await until('the request line', () => sink.lines.find((l) => l.msg === 'request' && l.traceId === traceId) ?? null);
    const own = sink.lines.filter((l) => l.traceId === traceId && l.msg !== 'request');
    expect(own.map((l) => [l.level, l.msg, l.status, l.error, l.route])).toEqual([[40, 'request refused', 501, 'not_implemented', '/v1/server/send-otp']]);
    expect(own[0].reason).toContain('send-otp');
    expect(JSON.stringify(own[0])).not.toContain('"stack"');
    expect(sink.lines.filter((l) => l.level >= 50)).toEqual([]);
  });

  it('500 (a bug) stays an error line with the stack', async () => {
    const failing = await startService({
      env: { LOG_LEVEL: 'info' },
      logDestination: sink.stream,
      beforeListen: (s) =>
        s.app.get('/test-only/bug', async () => {
          throw new TypeError('a bug');
        }),
    });
    try {
      const r = await fetch(`${failing.url}/test-only/bug`);
      expect(r.status).toBe(500);
      const traceId = r.headers.get('x-trace-id');
      const line = await until('the error line', () => sink.lines.find((l) => l.traceId === traceId && l.level === 50) ?? null);
      expect(line.msg).toBe('request failed');
      expect(line.err.stack).toContain('TypeError: a bug');
    } finally {
      await failing.stop();
    }
  });
});

describe('the process outside its JSON log', () => {
  let db: TestDatabase;
  let dataDir: string;
  let s: (Spawned & { url: string }) | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'combo-logs-'));
  });
  afterEach(async () => {
    if (s && s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    await s?.exited;
  });
  afterAll(async () => {
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('413 over HTTP/2 (the stream is ended): no UnsupportedWarning about a connection header on stderr', async () => {
    const adminToken = 'logs-test-admin-token-012345';
    s = await spawnService({ DATABASE_URL: db.url, DATA_DIR: dataDir, ADMIN_TOKEN: adminToken });
    const session = http2.connect(s.url);
    try {
      const answers: { status: number; connection: unknown }[] = [];
      for (let i = 0; i < 3; i++) {
        answers.push(
          await new Promise((resolve, reject) => {
            // No Content-Length: the body is refused while it is read (a Content-Length over the
            // limit is refused before, from the headers).
            const req = session.request({ ':method': 'POST', ':path': '/admin/v1/games', authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' });
            req.on('response', (h) => resolve({ status: Number(h[':status']), connection: h.connection }));
            req.on('error', reject);
            req.resume();
            req.end(Buffer.alloc(70000, 0x20));
          }),
        );
      }
      expect(answers).toEqual(Array(3).fill({ status: 413, connection: undefined }));
    } finally {
      session.close();
    }
    // What the process writes after the answers: a /healthz answered means the 413s' output is in.
    expect((await fetch(`${s.url}/healthz`)).status).toBe(200);
    s.child.kill('SIGTERM');
    await s.exited;
    expect(s.stderr()).not.toContain('UnsupportedWarning');
    expect(s.stderr()).toBe('');
    for (const line of s.stdout().split('\n').filter(Boolean)) expect(line.startsWith('{')).toBe(true);
  });
});
