import { describe, expect, it } from 'vitest';
import { keyId, SecretBox, UnknownSealingKeyError } from '../../src/lib/secret-box.js';

/**
 * Fixed vectors for the stored forms (src/lib/secret-box.ts). Values sealed by one release are
 * opened by the next: the key id derivation and the payload layout are part of the stored
 * data, so a change to either must break a test, not only the databases of operators.
 *
 * The vectors were computed outside this code base (Python's hashlib and the `cryptography`
 * package's AESGCM), from the key 00 01 02 .. 1f and the IV 64 65 .. 6f:
 *   key id  = sha256("combo-secret-box-key-id:" || key) as hex, first 8 characters
 *   payload = base64url(iv | AES-256-GCM(key, iv, plaintext) | tag), no padding
 */
const KEY = Buffer.from(Array.from({ length: 32 }, (_, i) => i));
const KEY_ID = '6de132df';
const PLAIN = 'sk_vector_secret_密钥';
const SEALED = `v2:${KEY_ID}:ZGVmZ2hpamtsbW5vO3CBEByKIvFMPSyNuRcPiR0nqYxi_lZenDBf2Y4EMoXxfZidMYbg`;

describe('SecretBox fixed vectors', () => {
  it('derives the documented key id from a known key', () => {
    expect(keyId(KEY)).toBe(KEY_ID);
    expect(new SecretBox(KEY).currentKeyId).toBe(KEY_ID);
  });

  it('opens a value sealed outside this code base, and counts it as current', () => {
    const box = new SecretBox(KEY);
    expect(box.isCurrent(SEALED)).toBe(true);
    expect(box.open(SEALED)).toBe(PLAIN);
    // Opened as a previous key too (the key id picks it).
    expect(new SecretBox(Buffer.alloc(32, 9), [KEY]).open(SEALED)).toBe(PLAIN);
  });

  it('a v2 value naming a known key id but carrying no payload is damaged, not sealed with another key: "truncated", as with an empty payload', () => {
    // `v2:<kid>` (no second colon). An UnknownSealingKeyError would advise setting
    // SECRETS_KEY_PREVIOUS, wrongly: the key is configured.
    const box = new SecretBox(KEY);
    expect(() => box.open(`v2:${KEY_ID}`)).toThrow('sealed secret is truncated');
    expect(() => box.open(`v2:${KEY_ID}`)).not.toThrow(UnknownSealingKeyError);
    expect(() => box.open(`v2:${KEY_ID}:`)).toThrow('sealed secret is truncated');
    // An unknown key id is the rotation case.
    expect(() => box.open('v2:0000000000000000:abcd')).toThrow(UnknownSealingKeyError);
  });
});

describe('SecretBox cache of opened values', () => {
  it('keeps at most about 10,000 opened values in memory', () => {
    const box = new SecretBox(KEY);
    // Sealed values are unique (fresh IV), so each open adds one entry.
    for (let i = 0; i < 10_050; i++) expect(box.open(box.seal(`s${i}`))).toBe(`s${i}`);
    // The cache is private: the bound is read from the instance (there is no other way to
    // observe memory held per value).
    const size = (box as unknown as { cache: Map<string, string> }).cache.size;
    expect(size).toBeLessThanOrEqual(10_001);
    // Cleared values still open (they are decrypted again).
    expect(box.open(SEALED)).toBe(PLAIN);
  });
});
