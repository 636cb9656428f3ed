import http2 from 'node:http2';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DualProtocolServer, HTTP2_MAX_STREAMS } from '../../src/http/dual-server.js';

/** The cleartext listener's own behaviour before a connection is handed to HTTP/1.1 or HTTP/2. */
describe('DualProtocolServer', () => {
  let server: DualProtocolServer | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r as () => void) ?? r(null));
  });

  async function listen(options: { firstBytesTimeoutMs?: number; http2IdleTimeoutMs?: number; headersTimeoutMs?: number }): Promise<number> {
    server = new DualProtocolServer((_req, res) => res.end('ok'), options);
    await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
    return (server.address() as net.AddressInfo).port;
  }

  it('answers 408 to headers that never end within about a second of the headers time-out, not up to 30 s late', async () => {
    const port = await listen({ headersTimeoutMs: 500 });
    // What the service's clientErrorHandler (Fastify's clientError listener) does with it.
    server!.on('clientError', (e: NodeJS.ErrnoException, s: net.Socket) => s.end(`HTTP/1.1 ${e.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request'}\r\nConnection: close\r\n\r\n`));
    const socket = net.connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (out += c));
    const started = Date.now();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n'); // the head is never finished
    await new Promise((r) => socket.once('close', r));
    expect(out).toMatch(/^HTTP\/1\.1 408 /);
    // Checked every second (Node's default: every 30 s).
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('closes a connection that stays silent before its first bytes', async () => {
    const port = await listen({ firstBytesTimeoutMs: 50 });
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('close', r));
    expect(socket.destroyed).toBe(true);
  });

  it('does not close a routed keep-alive connection by that time-out', async () => {
    const port = await listen({ firstBytesTimeoutMs: 50 });
    const socket = net.connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (out += c));
    const first = new Promise((r) => socket.once('data', r));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await first;
    // Proving that a time-out does NOT fire needs waiting past it: three times its length.
    await new Promise((r) => setTimeout(r, 150));
    expect(socket.destroyed).toBe(false);
    // A second request on the same connection: still served.
    const second = new Promise((r) => socket.once('data', r));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await second;
    expect(out.match(/HTTP\/1\.1 200/g)).toHaveLength(2);
    socket.destroy();
  });

  it('offers at most 128 concurrent streams per HTTP/2 session', async () => {
    const port = await listen({ http2IdleTimeoutMs: 60_000 });
    const session = http2.connect(`http://127.0.0.1:${port}`);
    await new Promise((r) => session.once('remoteSettings', r));
    expect(session.remoteSettings.maxConcurrentStreams).toBe(HTTP2_MAX_STREAMS);
    expect(HTTP2_MAX_STREAMS).toBe(128);
    session.close();
  });

  it('closes an idle HTTP/2 session, as HTTP/1.1 closes an idle connection', async () => {
    const port = await listen({ http2IdleTimeoutMs: 50 });
    const session = http2.connect(`http://127.0.0.1:${port}`);
    const answer = await new Promise<string>((resolve) => {
      const req = session.request({ ':path': '/' });
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => resolve(body));
    });
    expect(answer).toBe('ok');
    // Then nothing: the server ends the session.
    await new Promise((r) => session.once('close', r));
    expect(session.destroyed).toBe(true);
  });

  it('closes a connection that sent only the HTTP/2 preface and then nothing', async () => {
    const port = await listen({ http2IdleTimeoutMs: 50 });
    const socket = net.connect(port, '127.0.0.1');
    socket.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    socket.resume();
    await new Promise((r) => socket.once('close', r));
    expect(socket.destroyed).toBe(true);
  });
});
