/**
 * A caller-given URL as the operator API shows it: a password in it (`user:pass@host`, never
 * sent by the service, which signs its requests itself) replaced by `***`, so that reading
 * orders and notifications does not hand out a game's credentials.
 */
export function withoutPassword(url: string): string {
  if (!url.includes('@')) return url;
  try {
    const u = new URL(url);
    if (!u.password) return url;
    u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}
