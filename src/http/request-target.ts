/**
 * A request target in origin form: path and raw query, no scheme, no host. An HTTP/1.1 request
 * may name its target in absolute form (`POST http://host/v1/... HTTP/1.1`, RFC 9112 3.2.2),
 * which Node leaves in `req.url` as sent.
 */
export function originForm(url: string): string {
  if (url.charCodeAt(0) === 47 /* '/' */) return url;
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  if (!m) return url;
  const rest = url.slice(m[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}
