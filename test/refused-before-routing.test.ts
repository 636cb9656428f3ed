import { mkdtempSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DualProtocolServer } from '../src/http/dual-server.js';
import { selfSignedCertificate } from './helpers/certificates.js';
import { logSink } from './helpers/logs.js';
import { createGame, startService, wrongSignature, type TestService } from './helpers/service.js';

// Requests answered before routing (src/http/refusals.ts) leave a trace: a log line with the
// answer's trace id, and combo_http_requests_refused_total{reason,status}; they stay out of
// combo_http_requests_total, which counts routed requests.

interface LogLine {
  msg: string;
  route?: string;
  status?: number;
  reason?: string;
  traceId?: string;
}

/** Everything the server sent on a raw HTTP/1.1 connection until it closed. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (c) => (answer += c.toString('latin1')));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
    socket.write(bytes);
  });
}

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
const traceOf = (answer: string) => /\r\nx-trace-id: ([^\r]+)\r\n/i.exec(answer)?.[1];

/** An HTTP/2 request with any method; its status and trace id. */
function h2(url: string, headers: http2.OutgoingHttpHeaders, options: http2.SecureClientSessionOptions = {}): Promise<{ status: number; traceId: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, options);
    session.on('error', reject);
    const req = session.request(headers);
    let answer = { status: 0, traceId: '' };
    req.on('response', (h) => (answer = { status: Number(h[':status']), traceId: String(h['x-trace-id']) }));
    // Read to its end, or the session would stay open until the server's idle time-out.
    req.resume();
    req.on('end', () => {
      session.close();
      resolve(answer);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('requests refused before routing: a log line and a metric each', () => {
  let t: TestService;
  let port: number;
  const { lines, stream } = logSink<LogLine>();
  const refusals = () => lines.filter((l) => l.msg === 'request refused before routing');

  beforeAll(async () => {
    t = await startService({ env: { LOG_LEVEL: 'info', BODY_TIMEOUT_MS: '200' }, logDestination: stream });
    port = Number(new URL(t.url).port);
  });
  afterAll(async () => t?.stop());

  /** The refusal logged for an answer with this trace id. */
  const logged = (traceId: string | undefined) => refusals().find((l) => l.traceId === traceId);

  /** Sends raw HTTP/1.1 bytes: the answer's status and trace id. */
  const sent = (bytes: string) => async () => {
    const answer = await raw(port, bytes);
    return { status: statusOf(answer), traceId: traceOf(answer) };
  };

  const cases: [string, () => Promise<{ status: number; traceId: string | undefined }>, number, string][] = [
    ['a request Node cannot parse', sent('NOT HTTP AT ALL\r\n\r\n'), 400, 'malformed_request'],
    ['a request head over the size limit', sent(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), 431, 'headers_too_large'],
    ['HTTP/1.1 without Host', sent('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'), 400, 'missing_host'],
    ['an Expect other than 100-continue', sent('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n'), 417, 'expectation'],
    ['a path that is not percent-encoded UTF-8', sent('GET /admin/v1/games/%FF HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), 400, 'bad_path'],
    ['HTTP/1.1 CONNECT', sent('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n'), 400, 'connect'],
    ['HTTP/1.1 CONNECT to a path with routes', sent('CONNECT /admin/v1/games HTTP/1.1\r\nHost: x\r\n\r\n'), 405, 'connect'],
    ['HTTP/2 CONNECT', () => h2(t.url, { ':method': 'CONNECT', ':authority': 'example.com:443' }), 400, 'connect'],
    ['an HTTP/2 method no router knows', () => h2(t.url, { ':method': 'FOO', ':path': '/healthz' }), 400, 'unknown_method'],
  ];

  for (const [what, send, status, reason] of cases) {
    it(`${what}: ${status}, logged with its trace id as ${reason}`, async () => {
      const answer = await send();
      expect(answer.status).toBe(status);
      expect(answer.traceId).toMatch(/^[0-9a-z]{16,}$/);
      await expect.poll(() => logged(answer.traceId)).toEqual(expect.objectContaining({ status, reason, traceId: answer.traceId }));
    });
  }

  it('a request timed out by Node (its head or whole request not in time): 408 request_timeout', async () => {
    // Node's own time-outs are 20 and 30 s; the parser's error is raised here as Node raises it.
    const http1 = (t.service.app.server as unknown as DualProtocolServer).http1;
    const accepted = new Promise<net.Socket>((resolve) => http1.once('connection', resolve));
    const client = net.connect(port, '127.0.0.1');
    let answer = '';
    client.on('data', (c) => (answer += c.toString('latin1')));
    const closed = new Promise((resolve) => client.on('close', resolve));
    client.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    const socket = await accepted;
    http1.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
    await closed;
    expect(statusOf(answer)).toBe(408);
    expect(logged(traceOf(answer))).toEqual(expect.objectContaining({ status: 408, reason: 'request_timeout' }));
  });

  it('a body that does not arrive within BODY_TIMEOUT_MS belongs to a routed request: the request log and metric have its 408, not the refusals', async () => {
    // With a real game's Authorization, which only its body can prove wrong (without one it is
    // answered 401 before its body is read).
    const auth = wrongSignature(await createGame(t), 'POST', '/v1/server/enter-game');
    const answer = await sent(`POST /v1/server/enter-game HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"combo_id"`)();
    expect(answer.status).toBe(408);
    // Its line names the trace id the client was answered with, though the 408 was written
    // before the request reached the service's handler.
    await expect.poll(() => lines.find((l) => l.traceId === answer.traceId)).toEqual(expect.objectContaining({ msg: 'request', status: 408, route: '/v1/server/enter-game' }));
    expect(logged(answer.traceId)).toBeUndefined();
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).toMatch(/^combo_http_requests_total\{method="POST",route="\/v1\/server\/enter-game",status="408"\} 1$/m);
    expect(text).not.toMatch(/^combo_http_requests_refused_total\{reason="body_timeout"/m);
  });

  it('the metric counts each by reason and status, and combo_http_requests_total none of them', async () => {
    const text = await (await fetch(`${t.url}/metrics`)).text();
    const refused = text.split('\n').filter((l) => l.startsWith('combo_http_requests_refused_total{'));
    expect(refused.sort()).toEqual(
      [
        'reason="bad_path",status="400"} 1',
        'reason="connect",status="400"} 2', // HTTP/1.1 and HTTP/2
        'reason="connect",status="405"} 1',
        'reason="expectation",status="417"} 1',
        'reason="headers_too_large",status="431"} 1',
        'reason="malformed_request",status="400"} 1',
        'reason="missing_host",status="400"} 1',
        'reason="request_timeout",status="408"} 1',
        'reason="unknown_method",status="400"} 1',
      ].map((l) => `combo_http_requests_refused_total{${l}`),
    );
    // Routed requests only: the one /metrics scrape in flight is not counted yet, and no
    // refused request is there under any route.
    const routedErrors = text.split('\n').filter((l) => /^combo_http_requests_total\{.*status="(400|408|417|431)"/.test(l));
    expect(routedErrors).toEqual(['combo_http_requests_total{method="POST",route="/v1/server/enter-game",status="408"} 1']);
  });
});

describe('requests refused before routing over TLS (one server parses both protocols)', () => {
  it('an HTTP/2 method no router knows is counted there too', async () => {
    const { cert, key } = selfSignedCertificate(mkdtempSync(path.join(os.tmpdir(), 'combo-refused-tls-')));
    const t = await startService({ env: { TLS_CERT: cert, TLS_KEY: key } });
    try {
      expect((await h2(t.url, { ':method': 'FOO', ':path': '/healthz' }, { rejectUnauthorized: false })).status).toBe(400);
      const metrics = await h2Text(t.url, '/metrics');
      expect(metrics).toMatch(/^combo_http_requests_refused_total\{reason="unknown_method",status="400"\} 1$/m);
    } finally {
      await t.stop();
    }
  });
});

/** The body of an HTTP/2 GET over TLS (self-signed). */
function h2Text(url: string, p: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { rejectUnauthorized: false });
    session.on('error', reject);
    const req = session.request({ ':path': p });
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      session.close();
      resolve(body);
    });
    req.on('error', reject);
    req.end();
  });
}
