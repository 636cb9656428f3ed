import { createHash, createHmac, randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords, tokens and keys of operator accounts. Passwords are hashed with scrypt (N=2^15,
 * r=8, p=1, a 16-byte salt), stored as `scrypt$N$r$p$salt$hash` so the cost can be raised
 * later; tokens and API keys are random (32 bytes) and stored as their SHA-256, which is enough
 * for values that cannot be guessed.
 */
const COST = { N: 32768, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LENGTH = 32;

export { MIN_PASSWORD_LENGTH } from './password-rules.js';

function derive(password: string, salt: Buffer, o: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, o, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, COST);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A stored hash that never matches: checked when there is no account, so both cost the same. */
const NO_ACCOUNT = `scrypt$${COST.N}$${COST.r}$${COST.p}$${randomBytes(16).toString('base64url')}$${randomBytes(KEY_LENGTH).toString('base64url')}`;

/** Whether `password` matches `stored` (null: no account or no password yet; never matches). */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = (stored ?? NO_ACCOUNT).split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const key = await derive(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p), maxmem: COST.maxmem });
  const expected = Buffer.from(hash, 'base64url');
  return key.length === expected.length && timingSafeEqual(key, expected) && stored !== null;
}

/** A new random token with its prefix (`ak_` API keys, `inv_` invitations, `ses_` sessions). */
export const newToken = (prefix: string): string => `${prefix}${randomBytes(32).toString('base64url')}`;

export const tokenHash = (token: string): string => createHash('sha256').update(token).digest('hex');

/** The CSRF token of a console session: derived from its cookie, so nothing more is stored. */
export const csrfTokenOf = (sessionToken: string): string => createHmac('sha256', sessionToken).update('csrf').digest('base64url');

/** Constant-time equality of two strings (hashed first, so lengths may differ). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
