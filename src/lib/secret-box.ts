import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM for secrets at rest (game, partner and national-system keys). The stored form is
 * `v1:<base64url(iv | ciphertext | tag)>`; the version prefix leaves room for key rotation.
 */
export class SecretBox {
  private readonly cache = new Map<string, string>();
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('secret box key must be 32 bytes');
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return `v1:${Buffer.concat([iv, ct, c.getAuthTag()]).toString('base64url')}`;
  }

  open(sealed: string): string {
    const hit = this.cache.get(sealed);
    if (hit !== undefined) return hit;
    if (!sealed.startsWith('v1:')) throw new Error('unknown sealed secret format');
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    const d = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(raw.length - 16));
    const plain = Buffer.concat([d.update(raw.subarray(12, raw.length - 16)), d.final()]).toString('utf8');
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(sealed, plain);
    return plain;
  }
}
