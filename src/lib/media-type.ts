/**
 * Whether a Content-Type is JSON's (`application/json`, any parameters, any case): requests
 * are parsed as JSON only with it, and so are answers (rest-interface 1, rule 3).
 */
export function isJsonContentType(ct: string | undefined): boolean {
  // What SDKs send, answered without building strings. split() went through V8's runtime
  // (~1,500 instructions), and this runs twice per signed POST.
  if (ct === 'application/json' || ct === 'application/json; charset=utf-8') return true;
  if (!ct) return false;
  const semi = ct.indexOf(';');
  return (semi < 0 ? ct : ct.slice(0, semi)).trim().toLowerCase() === 'application/json';
}
