import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * The national system's message protection (nppa.md "Encryption" and "Signature"):
 * AES-128-GCM with the hex-decoded secretKey, a 12-byte IV, the wire body
 * `{"data": base64(IV || ciphertext || tag)}`, and a SHA-256 signature over
 * secretKey + sorted name/value pairs + the exact wire body.
 */
const IV_BYTES = 12;
const TAG_BYTES = 16;

function aesKey(secretKeyHex: string): Buffer {
  const key = Buffer.from(secretKeyHex, 'hex');
  if (key.length !== 16 || !/^[0-9a-fA-F]{32}$/.test(secretKeyHex)) throw new Error('secretKey must be 32 hex characters');
  return key;
}

/** base64(IV || ciphertext || tag); `iv` is fixed only by the specification's vector test. */
export function encryptData(secretKeyHex: string, plaintext: string, iv: Buffer = randomBytes(IV_BYTES)): string {
  const cipher = createCipheriv('aes-128-gcm', aesKey(secretKeyHex), iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, ct, cipher.getAuthTag()]).toString('base64');
}

/** Inverse of encryptData; throws when the tag does not verify. */
export function decryptData(secretKeyHex: string, data: string): string {
  const raw = Buffer.from(data, 'base64');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('data too short');
  const decipher = createDecipheriv('aes-128-gcm', aesKey(secretKeyHex), raw.subarray(0, IV_BYTES));
  decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString('utf8');
}

/** The exact string the signature hashes. `params`: appId, bizId, timestamps and query parameters. */
export function stringToSign(secretKey: string, params: Record<string, string>, body: string): string {
  const names = Object.keys(params).sort();
  return secretKey + names.map((n) => n + params[n]).join('') + body;
}

export function sign(secretKey: string, params: Record<string, string>, body: string): string {
  return createHash('sha256').update(stringToSign(secretKey, params, body), 'utf8').digest('hex');
}

/** The encrypted wire body for a plain JSON body. */
export function wireBody(secretKeyHex: string, plain: unknown): string {
  return JSON.stringify({ data: encryptData(secretKeyHex, JSON.stringify(plain)) });
}
