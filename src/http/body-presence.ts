import type http from 'node:http';

/** Whether the headers announce a body: a Content-Length other than 0, or a Transfer-Encoding. */
export function announcesBody(headers: http.IncomingHttpHeaders): boolean {
  const len = headers['content-length'];
  return (len !== undefined && len !== '0') || headers['transfer-encoding'] !== undefined;
}

/**
 * Whether a body may come: announced, or, over HTTP/2, which needs no length for one, the
 * HEADERS frame left the stream open (a client may still end it with an empty DATA frame, so
 * only the bytes read tell).
 */
export function bodyMayFollow(req: http.IncomingMessage): boolean {
  if (announcesBody(req.headers)) return true;
  const stream = (req as unknown as { stream?: { endAfterHeaders?: boolean } }).stream;
  return req.headers['content-length'] === undefined && stream?.endAfterHeaders === false;
}
