import type http2 from 'node:http2';
import type net from 'node:net';
import type tls from 'node:tls';
import { openSessions } from './dual-server.js';

/**
 * The TLS server (Fastify's Http2SecureServer) has none of what DualProtocolServer gives the
 * cleartext port: its idle HTTP/2 sessions held a graceful close until their 72 s time-out, and
 * the shutdown's force (closeAllConnections) did not exist, so a silent connection (even one
 * that never finished its handshake) held the exit for ever. Connections are tracked; close()
 * ends the sessions (GOAWAY) as it does in cleartext; closeAllConnections destroys everything.
 * The time-outs are the cleartext port's: a handshake (first bytes) within 20 s, headers within
 * 20 s, a whole HTTP/1.1 request within 30 s, checked every second.
 */
export function trackTlsConnections(server: http2.Http2SecureServer): void {
  // HTTP/1.1 over TLS answers a client that half-closes after its request, as in cleartext
  // (dual-server.ts): Node's HTTP/1.1 handling reads this flag from the server it runs under.
  (server as unknown as { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    if (socket.alpnProtocol !== 'h2') socket.allowHalfOpen = true;
  });
  const sockets = new Set<net.Socket>();
  const sessions = openSessions(server);
  server.on('connection', (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const t = server as unknown as { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number; closeAllConnections?: () => void };
  t.headersTimeout = 20_000;
  t.requestTimeout = 30_000;
  // Read when the server starts listening (Node's default for this server: every 30 s).
  t.connectionsCheckingInterval = 1000;
  const close = server.close.bind(server);
  server.close = ((cb?: (err?: Error) => void) => {
    close(cb);
    for (const session of sessions) session.close();
    return server;
  }) as typeof server.close;
  t.closeAllConnections = () => {
    for (const session of sessions) session.destroy();
    for (const socket of sockets) socket.destroy();
  };
}
