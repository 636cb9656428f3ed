import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keyId, SecretBox } from '../../src/lib/secret-box.js';

/** The v1 form written before key ids existed: `v1:<base64url(iv | ciphertext | tag)>`. */
function sealV1(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return `v1:${Buffer.concat([iv, ct, c.getAuthTag()]).toString('base64url')}`;
}

describe('SecretBox', () => {
  const a = randomBytes(32);
  const b = randomBytes(32);

  it('seals as v2:<key id>:<payload>, never the plaintext, fresh IV each time', () => {
    const box = new SecretBox(a);
    const s1 = box.seal('sk_plain_secret');
    const s2 = box.seal('sk_plain_secret');
    expect(s1).toMatch(new RegExp(`^v2:${keyId(a)}:[A-Za-z0-9_-]+$`));
    expect(keyId(a)).toMatch(/^[0-9a-f]{8}$/);
    expect(s1).not.toBe(s2);
    expect(s1).not.toContain('plain');
    expect(box.open(s1)).toBe('sk_plain_secret');
    expect(box.isCurrent(s1)).toBe(true);
  });

  it('still reads the older v1 form, with the current or a previous key', () => {
    expect(new SecretBox(a).open(sealV1(a, 'old'))).toBe('old');
    expect(new SecretBox(b, [a]).open(sealV1(a, 'old'))).toBe('old');
    expect(new SecretBox(b, [a]).isCurrent(sealV1(b, 'x'))).toBe(false);
    expect(() => new SecretBox(b).open(sealV1(a, 'old'))).toThrow(/SECRETS_KEY_PREVIOUS/);
  });

  it('opens values of the previous key by key id, seals only with the current key', () => {
    const old = new SecretBox(a).seal('s');
    const rotated = new SecretBox(b, [a]);
    expect(rotated.open(old)).toBe('s');
    expect(rotated.isCurrent(old)).toBe(false);
    expect(rotated.seal('s').startsWith(`v2:${keyId(b)}:`)).toBe(true);
    expect(() => new SecretBox(b).open(old)).toThrow(new RegExp(`unknown key id ${keyId(a)}`));
  });

  it('rejects tampered, truncated and unknown forms', () => {
    const box = new SecretBox(a);
    const s = box.seal('secret');
    const tampered = s.slice(0, -2) + (s.endsWith('AA') ? 'BB' : 'AA');
    expect(() => box.open(tampered)).toThrow();
    expect(() => box.open(`v2:${keyId(a)}:AAAA`)).toThrow(/truncated/);
    expect(() => box.open('plain')).toThrow(/unknown sealed secret format/);
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32 bytes/);
  });
});
