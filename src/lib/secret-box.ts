import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for secrets at rest (game, partner and national-system keys).
 *
 * Stored forms:
 * - `v2:<kid>:<base64url(iv | ciphertext | tag)>` (written now). `kid` names the key that
 *   sealed it (see `keyId`), so during a rotation the box picks the right key at once.
 * - `v1:<base64url(iv | ciphertext | tag)>` (older rows, no key id): still read, by trying
 *   the current key then the previous ones (GCM's tag tells a wrong key apart).
 *
 * Rotation: the box seals with the current key and opens with the current or any previous key
 * (SECRETS_KEY_PREVIOUS); `rotate-secrets` re-seals every stored value with the current key.
 */
/**
 * A value sealed with a key this instance was not given: a rotation step taken out of order
 * (docs/operations.md). A configuration state, not a fault of the request.
 */
export class UnknownSealingKeyError extends Error {
  override readonly name = 'UnknownSealingKeyError';
}

export class SecretBox {
  private readonly cache = new Map<string, string>();
  private readonly keys: { kid: string; key: Buffer }[];

  constructor(key: Buffer, previous: Buffer[] = []) {
    for (const k of [key, ...previous]) if (k.length !== 32) throw new Error('secret box key must be 32 bytes');
    this.keys = [key, ...previous].map((k) => ({ kid: keyId(k), key: k }));
  }

  /** The id of the key new values are sealed with. */
  get currentKeyId(): string {
    return (this.keys[0] as { kid: string }).kid;
  }

  seal(plain: string): string {
    const { kid, key } = this.keys[0] as { kid: string; key: Buffer };
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, iv);
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return `v2:${kid}:${Buffer.concat([iv, ct, c.getAuthTag()]).toString('base64url')}`;
  }

  /** True when `sealed` is already in the current form with the current key (nothing to rotate). */
  isCurrent(sealed: string): boolean {
    return sealed.startsWith(`v2:${this.currentKeyId}:`);
  }

  open(sealed: string): string {
    const hit = this.cache.get(sealed);
    if (hit !== undefined) return hit;
    const plain = this.decrypt(sealed);
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(sealed, plain);
    return plain;
  }

  private decrypt(sealed: string): string {
    if (sealed.startsWith('v2:')) {
      const [, kid, payload] = sealed.split(':');
      const entry = this.keys.find((k) => k.kid === kid);
      if (!entry) throw new UnknownSealingKeyError(`secret sealed with unknown key id ${kid}: set SECRETS_KEY_PREVIOUS to the key it was sealed with`);
      // A known key and no payload: the value is damaged, not sealed with another key.
      if (payload === undefined) throw new Error('sealed secret is truncated');
      return gcmOpen(entry.key, payload);
    }
    if (sealed.startsWith('v1:')) {
      for (const { key } of this.keys) {
        try {
          return gcmOpen(key, sealed.slice(3));
        } catch {
          // wrong key: try the next one
        }
      }
      throw new Error('secret could not be opened with SECRETS_KEY or SECRETS_KEY_PREVIOUS');
    }
    throw new Error('unknown sealed secret format');
  }
}

/** A short public name of a key: 8 hex characters of a domain-separated SHA-256 (reveals nothing usable). */
export function keyId(key: Buffer): string {
  return createHash('sha256').update('combo-secret-box-key-id:').update(key).digest('hex').slice(0, 8);
}

function gcmOpen(key: Buffer, payload: string): string {
  const raw = Buffer.from(payload, 'base64url');
  if (raw.length < 28) throw new Error('sealed secret is truncated');
  const d = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  d.setAuthTag(raw.subarray(raw.length - 16));
  return Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString('utf8');
}
