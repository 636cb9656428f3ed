import { createDecipheriv, createPrivateKey, createPublicKey, createSign, createVerify, randomBytes, type KeyObject } from 'node:crypto';

/**
 * WeChat Pay API v3 cryptography over node:crypto (WeChat Pay has no official Node.js SDK):
 * - requests are signed with the merchant's RSA key: `WECHATPAY2-SHA256-RSA2048` over
 *   "METHOD\nURL\nTIMESTAMP\nNONCE\nBODY\n" (URL: path and query);
 * - answers and callbacks carry `Wechatpay-Signature`, RSA-SHA256 over
 *   "TIMESTAMP\nNONCE\nBODY\n" with WeChat Pay's key (public-key mode: `Wechatpay-Serial` is the
 *   configured public key id);
 * - callback resources are AEAD_AES_256_GCM with the APIv3 key (the 16-byte tag ends the
 *   base64 ciphertext);
 * - the App payment's `sign` is RSA-SHA256 over "appid\ntimestamp\nnoncestr\nprepay_id\n".
 */
export const AUTH_SCHEMA = 'WECHATPAY2-SHA256-RSA2048';
/** How far a signed answer's or callback's timestamp may be from our clock. */
export const MAX_SKEW_SECONDS = 300;

export interface MerchantKey {
  mchid: string;
  serialNo: string;
  key: KeyObject;
}

export function requestMessage(method: string, url: string, timestamp: string, nonce: string, body: string): string {
  return `${method}\n${url}\n${timestamp}\n${nonce}\n${body}\n`;
}

export function answerMessage(timestamp: string, nonce: string, body: string): string {
  return `${timestamp}\n${nonce}\n${body}\n`;
}

export function appSignMessage(appid: string, timestamp: string, nonce: string, prepayId: string): string {
  return `${appid}\n${timestamp}\n${nonce}\n${prepayId}\n`;
}

export function rsaSign(key: KeyObject, message: string): string {
  return createSign('RSA-SHA256').update(message).sign(key, 'base64');
}

export function rsaVerify(key: KeyObject, message: string, signature: string): boolean {
  try {
    return createVerify('RSA-SHA256').update(message).verify(key, signature, 'base64');
  } catch {
    return false;
  }
}

/** A nonce of 32 upper-case hex characters, as WeChat Pay's examples use. */
export function nonce(): string {
  return randomBytes(16).toString('hex').toUpperCase();
}

/** The Authorization header of a request to WeChat Pay. */
export function authorization(m: MerchantKey, method: string, url: string, body: string, timestamp: string, nonceStr: string = nonce()): string {
  const signature = rsaSign(m.key, requestMessage(method, url, timestamp, nonceStr, body));
  return `${AUTH_SCHEMA} mchid="${m.mchid}",nonce_str="${nonceStr}",signature="${signature}",timestamp="${timestamp}",serial_no="${m.serialNo}"`;
}

export interface SignedHeaders {
  timestamp: string | undefined;
  nonce: string | undefined;
  signature: string | undefined;
  serial: string | undefined;
}

/** Reads the Wechatpay-* headers of an answer or callback. */
export function signedHeaders(headers: Record<string, string | string[] | undefined>): SignedHeaders {
  const one = (name: string) => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  return { timestamp: one('wechatpay-timestamp'), nonce: one('wechatpay-nonce'), signature: one('wechatpay-signature'), serial: one('wechatpay-serial') };
}

/**
 * Why a signed answer or callback does not verify, or null when it does: the serial must be the
 * configured public key id, the timestamp within MAX_SKEW_SECONDS of `nowSeconds`, and the
 * signature WeChat Pay's over the exact body.
 */
export function verificationFailure(h: SignedHeaders, body: string, publicKeyId: string, publicKey: KeyObject, nowSeconds: number): string | null {
  if (!h.timestamp || !h.nonce || !h.signature || !h.serial) return 'Wechatpay-Timestamp, -Nonce, -Signature or -Serial is missing';
  if (h.serial !== publicKeyId) return `Wechatpay-Serial ${h.serial.slice(0, 64)} is not the configured wechatpay_public_key_id`;
  if (!/^\d{1,12}$/.test(h.timestamp) || Math.abs(nowSeconds - Number(h.timestamp)) > MAX_SKEW_SECONDS) return 'Wechatpay-Timestamp is more than 5 minutes from now';
  if (!rsaVerify(publicKey, answerMessage(h.timestamp, h.nonce, body), h.signature)) return 'Wechatpay-Signature does not verify with the configured WeChat Pay public key';
  return null;
}

export interface EncryptedResource {
  algorithm: string;
  ciphertext: string;
  associated_data?: string;
  nonce: string;
}

/** Opens a callback's `resource` with the APIv3 key; throws when it does not authenticate. */
export function decryptResource(r: EncryptedResource, apiV3Key: string): string {
  if (r.algorithm !== 'AEAD_AES_256_GCM') throw new Error(`resource algorithm ${r.algorithm} is not AEAD_AES_256_GCM`);
  const key = Buffer.from(apiV3Key, 'utf8');
  if (key.length !== 32) throw new Error('api_v3_key is not 32 bytes');
  const data = Buffer.from(r.ciphertext, 'base64');
  if (data.length < 16) throw new Error('resource ciphertext is shorter than its tag');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(r.nonce, 'utf8'));
  decipher.setAuthTag(data.subarray(data.length - 16));
  decipher.setAAD(Buffer.from(r.associated_data ?? '', 'utf8'));
  return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString('utf8');
}

/** A PEM private key (PKCS#8 as WeChat Pay issues apiclient_key.pem, or PKCS#1). */
export function privateKey(pem: string): KeyObject {
  return createPrivateKey({ key: pem, format: 'pem' });
}

/** A PEM public key (SPKI, as WeChat Pay's public-key mode hands it out). */
export function publicKey(pem: string): KeyObject {
  return createPublicKey({ key: pem, format: 'pem' });
}
