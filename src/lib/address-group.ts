import { isIPv6 } from 'node:net';

/**
 * The unit an address is limited by when guesses are counted: an IPv4 address itself, an IPv6
 * address by its /64, the block one subscriber or host is usually given (a guesser with a /64
 * has 2^64 addresses to rotate through, one attempt each). An IPv4-mapped IPv6 address
 * (`::ffff:203.0.113.7`, as a dual-stack socket reports IPv4 clients) is its IPv4 address.
 * Anything else (not an IP address) is returned as given.
 */
export function addressGroup(ip: string): string {
  const zone = ip.indexOf('%');
  const bare = zone < 0 ? ip : ip.slice(0, zone);
  if (!isIPv6(bare)) return ip;
  const g = expand(bare);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    const [hi, lo] = [g[6] as number, g[7] as number];
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`;
}

/** The eight 16-bit groups of a valid IPv6 address (an embedded IPv4 tail counts as two). */
function expand(ip: string): number[] {
  const groups = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((g) => {
          if (!g.includes('.')) return [parseInt(g, 16)];
          const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number];
          return [(a << 8) | b, (c << 8) | d];
        });
  const gap = ip.indexOf('::');
  if (gap < 0) return groups(ip);
  const head = groups(ip.slice(0, gap));
  const tail = groups(ip.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}
