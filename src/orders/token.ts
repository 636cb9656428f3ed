import { timingSafeEqual } from 'node:crypto';
import { randomBase62 } from '../lib/ids.js';

/**
 * Order tokens: `ot_<order_id>_<32 random base62>`. The random part is stored with the order,
 * so the token is unguessable (190 bits), bound to one order, carries no secret of the
 * service, is verified by one primary-key lookup, and a replayed create-order returns it again.
 */
const TOKEN_RE = /^ot_(\d{1,20})_([0-9A-Za-z]{32})$/;

export function newTokenSecret(): string {
  return randomBase62(32);
}

export function formatOrderToken(orderId: string, secret: string): string {
  // Joined, not a template literal: that makes a V8 cons string, which the response serialiser's
  // escape check (a regular expression) runs through V8's slow runtime path.
  return ['ot_', orderId, '_', secret].join('');
}

export function parseOrderToken(token: string): { orderId: string; secret: string } | null {
  const m = TOKEN_RE.exec(token);
  return m ? { orderId: m[1] as string, secret: m[2] as string } : null;
}

export function tokenSecretMatches(stored: string, given: string): boolean {
  const a = Buffer.from(stored);
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}
