import net from 'node:net';
import type { TestService } from './service.js';

export interface RawAnswer {
  status: number;
  /** Header names lower-cased; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
}

/**
 * Sends bytes exactly as given over a fresh TCP connection (`Connection: close`) and parses
 * the HTTP/1.1 answer. For what fetch refuses to send: duplicated headers, odd Content-Types,
 * bodies that are not valid UTF-8.
 */
export async function rawRequest(t: TestService, head: string, body: Buffer | string = ''): Promise<RawAnswer> {
  return parseAnswer(await sendAndCollect(t, Buffer.concat([Buffer.from(head.replace(/\r?\n/g, '\r\n') + '\r\n'), Buffer.from(body)])));
}

/** Builds the head of a request line + headers (each "Name: value"), adding Host, Content-Length and Connection: close. */
export function head(method: string, uri: string, headers: string[], bodyLength: number): string {
  return [`${method} ${uri} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', `Content-Length: ${bodyLength}`, ...headers, ''].join('\r\n');
}

function parseAnswer(buf: Buffer): RawAnswer {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) throw new Error(`no HTTP answer: ${JSON.stringify(buf.toString('latin1').slice(0, 200))}`);
  const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1]);
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    const k = l.slice(0, i).trim().toLowerCase();
    const v = l.slice(i + 1).trim();
    headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
  }
  let body = buf.subarray(end + 4);
  if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { status, headers, body: body.toString('utf8') };
}

function dechunk(b: Buffer): Buffer {
  const out: Buffer[] = [];
  let rest = b;
  for (;;) {
    const nl = rest.indexOf('\r\n');
    const size = parseInt(rest.subarray(0, nl).toString('latin1'), 16);
    if (!size) return Buffer.concat(out);
    out.push(rest.subarray(nl + 2, nl + 2 + size));
    rest = rest.subarray(nl + 2 + size + 2);
  }
}

/** Row counts of the tables a 4xx must never touch, for one game. */
export async function storedRows(t: TestService, gameId: string): Promise<{ orders: number; sessions: number }> {
  const db = t.service.database.db;
  const count = async (table: 'orders' | 'sessions') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('game_id', '=', gameId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  return { orders: await count('orders'), sessions: await count('sessions') };
}

/**
 * Writes bytes as given on a fresh connection (several pipelined requests, say) without
 * half-closing it (test/half-close.test.ts covers clients that do), and resolves with
 * everything the server sent until it closed the connection.
 */
export async function exchange(t: TestService, bytes: string): Promise<string> {
  return (await sendAndCollect(t, Buffer.from(bytes))).toString('latin1');
}

function sendAndCollect(t: TestService, bytes: Buffer): Promise<Buffer> {
  const { hostname, port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.write(bytes);
  });
}

/** The status codes of the HTTP/1.1 answers in `text`, in order. */
export function statusesOf(text: string): number[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1]));
}
