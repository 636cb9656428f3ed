/**
 * An open-loop HTTP/1.1 load generator: requests are sent at a constant arrival rate whether or
 * not earlier ones were answered (autocannon's `overallRate` only caps a closed loop per second),
 * round-robin over keep-alive connections (pipelined when a connection is still busy), and every
 * answer is timed from its send, per status. Requests are pre-built buffers (signed beforehand),
 * and answers are parsed just enough (status, Content-Length) to keep the generator cheap: on a
 * 2-core machine it shares the CPU with the service.
 */
import net from 'node:net';
import tls from 'node:tls';

export interface OpenLoopOptions {
  host: string;
  port: number;
  /** Requests per second. */
  rate: number;
  seconds: number;
  connections: number;
  /** The next request, a complete HTTP/1.1 request. */
  next: () => Buffer;
  /** How long to wait for outstanding answers after the last send (ms). */
  drainMs?: number;
  /** Over TLS, HTTP/1.1 by ALPN; the server's certificate is not checked (a local proxy's own). */
  tls?: boolean;
}

export interface OpenLoopResult {
  sent: number;
  /** From the first send to the last. */
  seconds: number;
  /** Latencies (ms) per HTTP status. */
  byStatus: Record<string, number[]>;
  /** Requests on connections that failed or closed before answering. */
  errors: number;
  /** Requests still unanswered drainMs after the last send. */
  unanswered: number;
  /** How far the generator fell behind its schedule at worst (ms). */
  maxLagMs: number;
}

interface Conn {
  sock: net.Socket;
  pending: number[];
  buf: Buffer;
  dead: boolean;
}

/** A complete HTTP/1.1 POST request with a JSON body. */
export function httpPost(path: string, body: string, headers: Record<string, string>): Buffer {
  const b = Buffer.from(body, 'utf8');
  const h = Object.entries({ host: '127.0.0.1', 'content-type': 'application/json', ...headers, 'content-length': String(b.length) })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\n${h}\r\n`, 'latin1'), b]);
}

export async function openLoop(o: OpenLoopOptions): Promise<OpenLoopResult> {
  const byStatus: Record<string, number[]> = {};
  let errors = 0;
  let answered = 0;
  const conns: Conn[] = await Promise.all(
    Array.from(
      { length: o.connections },
      () =>
        new Promise<Conn>((resolve, reject) => {
          const sock = o.tls
            ? tls.connect({ host: o.host, port: o.port, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }).setNoDelay(true)
            : net.connect({ host: o.host, port: o.port, noDelay: true });
          const c: Conn = { sock, pending: [], buf: Buffer.alloc(0), dead: false };
          sock.once(o.tls ? 'secureConnect' : 'connect', () => resolve(c));
          sock.once('error', reject);
        }),
    ),
  );
  for (const c of conns) {
    c.sock.removeAllListeners('error');
    const fail = () => {
      if (c.dead) return;
      c.dead = true;
      errors += c.pending.length;
      c.pending.length = 0;
    };
    c.sock.on('error', fail);
    c.sock.on('close', fail);
    c.sock.on('data', (chunk: Buffer) => {
      const now = performance.now();
      let buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
      for (;;) {
        const he = buf.indexOf('\r\n\r\n');
        if (he < 0) break;
        const head = buf.toString('latin1', 0, he);
        const m = /\r\ncontent-length: *(\d+)/i.exec(head);
        const end = he + 4 + (m ? Number(m[1]) : 0);
        if (buf.length < end) break;
        const status = head.slice(9, 12);
        const sentAt = c.pending.shift();
        if (sentAt !== undefined) {
          (byStatus[status] ??= []).push(now - sentAt);
          answered++;
        }
        buf = buf.subarray(end);
      }
      c.buf = buf;
    });
  }

  let sent = 0;
  let rr = 0;
  let maxLagMs = 0;
  const total = Math.round(o.rate * o.seconds);
  const t0 = performance.now();
  let last = t0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      const due = Math.min(total, Math.floor(((now - t0) * o.rate) / 1000));
      if (due > sent) maxLagMs = Math.max(maxLagMs, now - (t0 + (sent * 1000) / o.rate));
      while (sent < due) {
        let c = conns[rr++ % conns.length]!;
        for (let k = 0; c.dead && k < conns.length; k++) c = conns[rr++ % conns.length]!;
        if (c.dead) {
          errors += due - sent;
          sent = due;
          break;
        }
        c.pending.push(performance.now());
        c.sock.write(o.next());
        sent++;
      }
      last = now;
      if (sent >= total) {
        clearInterval(timer);
        resolve();
      }
    };
    const timer = setInterval(tick, 1);
  });
  const seconds = (last - t0) / 1000;
  const drainUntil = performance.now() + (o.drainMs ?? 5000);
  while (answered + errors < sent && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 20));
  const unanswered = sent - answered - errors;
  for (const c of conns) {
    c.dead = true;
    c.sock.destroy();
  }
  return { sent, seconds, byStatus, errors, unanswered, maxLagMs: Math.round(maxLagMs) };
}
