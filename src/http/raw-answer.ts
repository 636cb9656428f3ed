import type http from 'node:http';
import type net from 'node:net';

/** Sockets already given (or waiting to be given) a raw answer: later parse errors are ignored. */
const answered = new WeakSet<net.Socket>();

type ParsedSocket = net.Socket & {
  _httpMessage?: http.ServerResponse | null;
  /** Node's HTTP parser; `incoming` is the request whose bytes it was reading (none: a new request's head). */
  parser?: { incoming?: http.IncomingMessage | null } | null;
};

/**
 * Writes a last answer straight to an HTTP/1.1 socket (a request Node could not parse or that
 * timed out, a CONNECT) and ends the connection, one answer per request and in order:
 * - pipelined requests before the refused one are answered first: written at once, the
 *   refusal would be read as the answer to one of those (a 400 for an order that was created);
 * - a refused request that already has its answer (a 404 or 415 sent before its body, whose
 *   body then could not be parsed) gets no second one: the connection just ends after it;
 * - a refused request still being handled (its body could not be parsed, or did not arrive in
 *   time) gets this as its answer, and the connection is closed after it, which ends the
 *   handler's wait for the body and frees its in-progress place.
 */
export function answerLast(socket: net.Socket, raw: () => string): void {
  if (answered.has(socket)) return;
  answered.add(socket);
  // A request whose body is complete is not the one refused: the error is in the bytes after it.
  const incoming = (socket as ParsedSocket).parser?.incoming;
  writeWhenDue(socket as ParsedSocket, raw, incoming && !incoming.complete ? incoming : null);
}

function writeWhenDue(socket: ParsedSocket, raw: () => string, refused: http.IncomingMessage | null): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const inFlight = socket._httpMessage;
  if (inFlight && inFlight.req !== refused) {
    // An earlier request's answer. Still attached, it has not emitted 'finish' yet, even when
    // all of it was written (writableFinished): Node's own 'finish' listener detaches it and
    // hands the socket to the next queued answer, and runs before this one.
    inFlight.once('finish', () => writeWhenDue(socket, raw, refused));
    inFlight.once('close', () => {
      if (!inFlight.writableFinished) socket.destroy();
    });
    return;
  }
  // What else the client sends is not read: the parser has stopped.
  socket.resume();
  if (inFlight && inFlight.req === refused) {
    if (inFlight.headersSent) {
      if (inFlight.writableFinished) socket.end();
      else inFlight.once('finish', () => socket.end());
    } else {
      socket.end(raw(), () => socket.destroy());
    }
    return;
  }
  // Its answer was sent and done with already.
  if (refused) return void socket.end();
  socket.end(raw());
}
