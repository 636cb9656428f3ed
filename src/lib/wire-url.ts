/**
 * A game's URL (notify_url, gm_url) as it is sent and signed. WHATWG parsing leaves `|` and `^`
 * literal in a path, but Go's net/url escapes them when the Go SDK rebuilds the request URI it
 * verifies (`%7C`, `%5E`): sent escaped, the URI signed is the one both SDKs compute.
 */
export function wireUrl(url: string): URL {
  const u = new URL(url);
  if (/[|^]/.test(u.pathname)) u.pathname = u.pathname.replace(/\|/g, '%7C').replace(/\^/g, '%5E');
  return u;
}
