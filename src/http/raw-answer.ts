import type http from 'node:http';
import type net from 'node:net';

/** Sockets already given (or waiting to be given) a raw answer: later parse errors are ignored. */
const answered = new WeakSet<net.Socket>();

/**
 * Writes a last answer straight to an HTTP/1.1 socket (a request Node could not parse, a
 * CONNECT) and ends the connection, in order: pipelined requests before the refused one whose
 * bodies are complete are answered first. Written at once, the refusal would be read as the
 * answer to one of those (a 400 for an order that was in fact created).
 *
 * A response in flight for a request whose body is NOT complete is the refused request's own
 * (its body could not be parsed, or did not arrive in time): the refusal goes at once, as that
 * request's answer.
 */
export function answerLast(socket: net.Socket, raw: () => string): void {
  if (answered.has(socket)) return;
  answered.add(socket);
  writeWhenDue(socket, raw);
}

function writeWhenDue(socket: net.Socket, raw: () => string): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const inFlight = (socket as { _httpMessage?: http.ServerResponse | null })._httpMessage;
  if (inFlight && !inFlight.writableFinished && inFlight.req?.complete) {
    // Node's own 'finish' listener runs first and hands the socket to the next queued answer.
    inFlight.once('finish', () => writeWhenDue(socket, raw));
    inFlight.once('close', () => {
      if (!inFlight.writableFinished) socket.destroy();
    });
    return;
  }
  // What else the client sends is not read: the parser has stopped.
  socket.resume();
  socket.end(raw());
}
