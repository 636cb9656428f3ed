import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { answerLast } from '../../src/http/raw-answer.js';

/** A connected pair of real TCP sockets: [the server's side, the client's side]. */
async function socketPair(): Promise<[net.Socket, net.Socket, () => void]> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  return [await accepted, client, () => server.close()];
}

describe('answerLast (a raw last answer on an HTTP/1.1 connection)', () => {
  it('writes one answer and ends the connection; a second call for the same connection (another parse error of its later bytes) writes nothing', async () => {
    const [socket, client, close] = await socketPair();
    try {
      const got = new Promise<{ text: string; error: string | null }>((resolve) => {
        let text = '';
        let error: string | null = null;
        client.on('data', (c) => (text += c.toString('latin1')));
        client.on('error', (e) => (error = (e as NodeJS.ErrnoException).code ?? 'error'));
        client.on('close', () => resolve({ text, error }));
      });
      answerLast(socket, () => 'first');
      answerLast(socket, () => 'second');
      // The client keeps sending; nothing reads it, nothing resets the connection.
      client.end('more bytes of the refused request');
      expect(await got).toEqual({ text: 'first', error: null });
    } finally {
      close();
    }
  });
});
