import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';

/**
 * One cleartext port for HTTP/1.1 and HTTP/2 with prior knowledge. Node's http2 server only
 * offers HTTP/1.1 fallback over TLS (ALPN), so this listener peeks at each connection's first
 * bytes: the HTTP/2 connection preface goes to an http2 server, anything else to an http/1.1
 * server. Both hand requests to the same Fastify handler.
 */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
export const HTTP2_MAX_STREAMS = 128;

/** A Node request handler (what Fastify hands its server, and what load shedding wraps). */
export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export class DualProtocolServer extends net.Server {
  readonly http1: http.Server;
  readonly http2: http2.Http2Server;
  private readonly sessions: Set<http2.Http2Session>;

  /** How long a new connection may stay silent before its protocol is known (then closed). */
  private readonly firstBytesTimeoutMs: number;

  constructor(handler: Handler, options: { firstBytesTimeoutMs?: number; http2IdleTimeoutMs?: number; headersTimeoutMs?: number } = {}) {
    // The accepting server applies socket options: without noDelay, Nagle + delayed ACK stall answers.
    // allowHalfOpen: a client's FIN closes only its side (see http1 below).
    super({ pauseOnConnect: false, noDelay: true, keepAlive: true, allowHalfOpen: true });
    this.firstBytesTimeoutMs = options.firstBytesTimeoutMs ?? 20_000;
    // requireHostHeader off: the handler answers a missing Host itself, as an ErrorResponse.
    // Node checks the header and request time-outs every connectionsCheckingInterval (30 s by
    // default), so they fired up to 30 s late; checked every second, they hold to a second.
    const headersTimeout = options.headersTimeoutMs ?? 20_000;
    this.http1 = http.createServer(
      { keepAliveTimeout: 65_000, requestTimeout: Math.max(30_000, headersTimeout), headersTimeout, connectionsCheckingInterval: 1000, requireHostHeader: false },
      handler,
    );
    // A client that half-closes after its request (RFC 9112 9.6: a half-closed connection does
    // not mean it no longer wants the answer; `printf ... | nc -N`, some proxies' health checks)
    // gets its answers, and the connection ends after the last. Node's default aborts the
    // request in progress at the FIN and drops its answer, though the write may have been made.
    (this.http1 as http.Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    // Node's HTTP/2 server has no time-outs of its own and allows ~4 billion streams per
    // session: an idle session (or one that only sent the preface) would stay open forever.
    // Idle sessions end as idle HTTP/1.1 connections do; a session gets 128 streams at once.
    this.http2 = http2.createServer({ settings: { maxConcurrentStreams: HTTP2_MAX_STREAMS } }, handler as unknown as (r: http2.Http2ServerRequest, s: http2.Http2ServerResponse) => void);
    this.http2.setTimeout(options.http2IdleTimeoutMs ?? 65_000);
    this.sessions = openSessions(this.http2);
    // Fastify registers 'request'-adjacent listeners (clientError, ...) on the server it gets;
    // forward them to the protocol servers.
    this.http1.on('clientError', (err, socket) => this.emit('clientError', err, socket));
    this.on('connection', (socket: net.Socket) => this.route(socket));
    // node:http tracks connections (idle closing, request/header time-outs) from its
    // 'listening' event; this server never listens itself, so pass ours on.
    this.on('listening', () => this.http1.emit('listening'));
  }

  private route(socket: net.Socket): void {
    // Read until the first bytes either are the whole preface or stop matching it: a preface
    // split across TCP segments must not be taken for HTTP/1.1.
    let head = Buffer.alloc(0);
    const onEnd = () => socket.destroy();
    // Before routing no protocol server watches the socket: a client that connects and stays
    // silent would hold it forever. The protocol servers apply their own time-outs after.
    const onTimeout = () => socket.destroy();
    socket.setTimeout(this.firstBytesTimeoutMs);
    socket.once('timeout', onTimeout);
    const onReadable = () => {
      for (let chunk: Buffer | null = socket.read(); chunk !== null; chunk = socket.read()) head = Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      const matches = head.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (head.length === 0 || (matches && head.length < PREFACE.length)) return;
      socket.off('readable', onReadable);
      socket.off('end', onEnd);
      socket.setTimeout(0);
      socket.off('timeout', onTimeout);
      socket.unshift(head);
      // An HTTP/2 client's FIN ends its session, as before: the socket ends its side too.
      if (matches) socket.allowHalfOpen = false;
      (matches ? this.http2 : this.http1).emit('connection', socket);
    };
    socket.on('readable', onReadable);
    socket.once('end', onEnd);
  }

  override close(cb?: (err?: Error) => void): this {
    super.close(cb);
    this.http1.close();
    this.http1.closeIdleConnections();
    // A keep-alive connection whose request is in flight turns idle only once it is answered,
    // and Node closes idle ones at close() only: without this it stayed open until the grace
    // period ran out (SHUTDOWN_TIMEOUT_MS), holding the exit.
    const sweep = setInterval(() => this.http1.closeIdleConnections(), 50);
    sweep.unref();
    this.once('close', () => clearInterval(sweep));
    this.http2.close();
    for (const s of this.sessions) s.close();
    return this;
  }

  closeIdleConnections(): void {
    this.http1.closeIdleConnections();
  }

  /** Force-close whatever is still open once the grace period is over. */
  closeAllConnections(): void {
    this.http1.closeAllConnections();
    for (const s of this.sessions) s.destroy();
  }
}

/** The HTTP/2 sessions of a server that are open now (a shutdown closes them itself). */
export function openSessions(server: http2.Http2Server | http2.Http2SecureServer): Set<http2.Http2Session> {
  const sessions = new Set<http2.Http2Session>();
  server.on('session', (session: http2.Http2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  return sessions;
}
