import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decryptData, encryptData, sign, stringToSign } from '../../src/compliance/nppa-crypto.js';

// shared/spec sits beside the repository (main checkout) or two levels up (a worktree).
const vectorFile = ['../../../shared/spec/vectors/nppa.json', '../../../../shared/spec/vectors/nppa.json']
  .map((p) => new URL(p, import.meta.url))
  .find((u) => existsSync(u));
const vectors = JSON.parse(readFileSync(vectorFile ?? new URL('../../../shared/spec/vectors/nppa.json', import.meta.url), 'utf8'));

describe('national-system vectors (nppa.json)', () => {
  it('encryption with the fixed IV reproduces data', () => {
    const v = vectors.encryption;
    expect(encryptData(v.secretKey, v.plaintext, Buffer.from(v.iv_hex, 'hex'))).toBe(v.data);
    expect(decryptData(v.secretKey, v.data)).toBe(v.plaintext);
  });

  it('the signature reproduces string_to_hash and sign', () => {
    const v = vectors.signature;
    const params = { ...v.headers, ...v.query };
    expect(stringToSign(v.secretKey, params, v.body)).toBe(v.string_to_hash);
    expect(sign(v.secretKey, params, v.body)).toBe(v.sign);
  });

  it('a random IV round-trips and a tampered body fails', () => {
    const key = vectors.encryption.secretKey;
    const a = encryptData(key, '{"collections":[]}');
    expect(a).not.toBe(encryptData(key, '{"collections":[]}'));
    expect(decryptData(key, a)).toBe('{"collections":[]}');
    const raw = Buffer.from(a, 'base64');
    raw[14] = (raw[14] as number) ^ 1;
    expect(() => decryptData(key, raw.toString('base64'))).toThrow();
  });
});
