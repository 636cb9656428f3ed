/**
 * Whether a Content-Type is JSON's (`application/json`, any parameters, any case): requests
 * are parsed as JSON only with it, and so are answers (rest-interface 1, rule 3).
 */
export function isJsonContentType(ct: string | undefined): boolean {
  // What SDKs send, answered without building strings: split() goes through V8's runtime, and
  // this runs twice per signed POST.
  if (ct === 'application/json' || ct === 'application/json; charset=utf-8') return true;
  if (!ct) return false;
  const semi = ct.indexOf(';');
  return (semi < 0 ? ct : ct.slice(0, semi)).trim().toLowerCase() === 'application/json';
}

/**
 * Whether an Accept header asks for HTML over JSON (RFC 9110 12.5.1): `text/html` named with a
 * q above 0, at least as high as JSON's (`application/json`, else `application/*`, else
 * `*\/*`). A browser's Accept names text/html first; an API client's `*\/*`, or `text/html;q=0`,
 * gets JSON.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (!accept) return false;
  let html = -1;
  let json = -1;
  let jsonSpecificity = -1;
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((p) => p.trim().toLowerCase());
    let q = 1;
    for (const p of params) if (p.startsWith('q=')) q = Number(p.slice(2));
    if (!Number.isFinite(q)) continue;
    if (type === 'text/html') html = q;
    const specificity = type === 'application/json' ? 2 : type === 'application/*' ? 1 : type === '*/*' ? 0 : -1;
    if (specificity > jsonSpecificity) {
      jsonSpecificity = specificity;
      json = q;
    }
  }
  return html > 0 && html >= json;
}
