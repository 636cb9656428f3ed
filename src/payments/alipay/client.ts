import { createHash, createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { AlipaySdk } from 'alipay-sdk';
import { Errors } from '../../errors.js';
import type { AlipaySettings } from './settings.js';

/** Alipay's answer to an OpenAPI call, its `<method>_response` object (snake_case keys). */
export type AlipayAnswer = Record<string, unknown> & { code: string; msg?: string; sub_code?: string; sub_msg?: string };

/** A call to Alipay that did not get a verified answer (network, gateway, signature). */
export class AlipayCallError extends Error {
  override readonly name = 'AlipayCallError';
}

const MAX_CLIENTS = 1000;
/** Beijing time (UTC+8, no daylight saving): Alipay's timestamps and time_expire are in it. */
const BEIJING_OFFSET_MS = 8 * 3600_000;

/**
 * The official `alipay-sdk` (OpenAPI 2.0 gateway, RSA2) for each game's alipay channel: one
 * AlipaySdk per application and key pair, over ALIPAY_GATEWAY_URL. Requests are signed with
 * the application's private key; answers (`sign` of `<method>_response`) and notifies are
 * verified with Alipay's public key.
 */
export class AlipayClients {
  private readonly clients = new Map<string, AlipaySdk>();

  constructor(
    /** ALIPAY_GATEWAY_URL. */
    readonly gateway: string,
    private readonly now: () => number,
  ) {}

  of(s: AlipaySettings): AlipaySdk {
    const id = createHash('sha256').update(`${s.app_id}\n${s.app_private_key}\n${s.alipay_public_key}`).digest('base64url');
    let sdk = this.clients.get(id);
    if (!sdk) {
      const { privateKey, publicKey } = readKeys(s);
      sdk = new AlipaySdk({
        appId: s.app_id,
        privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
        keyType: 'PKCS8',
        alipayPublicKey: publicKey.export({ type: 'spki', format: 'pem' }) as string,
        gateway: this.gateway,
        signType: 'RSA2',
        camelcase: false,
        timeout: 10_000,
      });
      // The SDK keeps the keys as PEM text and hands them to node:crypto on every signature,
      // which parses the PEM each time (about 1 ms a notify on the benchmark VM, against 0.15 ms
      // of RSA work): node:crypto takes the parsed keys as well.
      Object.assign(sdk.config, { privateKey, alipayPublicKey: publicKey });
      if (this.clients.size >= MAX_CLIENTS) this.clients.clear();
      this.clients.set(id, sdk);
    }
    return sdk;
  }

  /** A signed GET URL of the gateway for a page method (alipay.trade.page.pay, alipay.trade.wap.pay). */
  pageUrl(s: AlipaySettings, method: string, bizContent: Record<string, unknown>, notifyUrl: string): string {
    return this.of(s).pageExecute(method, 'GET', { bizContent, notifyUrl, timestamp: this.timestamp() });
  }

  /** The signed order string the Alipay App SDK pays with (alipay.trade.app.pay). */
  orderString(s: AlipaySettings, method: string, bizContent: Record<string, unknown>, notifyUrl: string): string {
    return this.of(s).sdkExecute(method, { bizContent, notifyUrl, timestamp: this.timestamp() }, { bizContentAutoSnakeCase: false });
  }

  /**
   * Calls an OpenAPI method (alipay.trade.query, .refund, .close) and answers its verified
   * `<method>_response`, whatever its `code` (the caller reads it: 10000 is success).
   * AlipayCallError when no verified answer came.
   */
  async call(s: AlipaySettings, method: string, bizContent: Record<string, unknown>): Promise<AlipayAnswer> {
    let answer: Record<string, unknown>;
    try {
      answer = await this.of(s).exec(method, { bizContent, timestamp: this.timestamp() }, { validateSign: true });
    } catch (e) {
      throw new AlipayCallError(`${method}: ${(e as Error).message}`, { cause: e });
    }
    if (typeof answer.code !== 'string') throw new AlipayCallError(`${method}: the answer has no code`);
    return answer as AlipayAnswer;
  }

  /** Whether a notify's fields carry Alipay's RSA2 signature (the values as posted, decoded once). */
  verifyNotify(s: AlipaySettings, fields: Record<string, string>): boolean {
    if (fields.sign_type !== undefined && fields.sign_type !== 'RSA2') return false;
    try {
      return this.of(s).checkNotifySignV2(fields);
    } catch {
      return false;
    }
  }

  /** "yyyy-MM-dd HH:mm:ss" in Beijing time, as Alipay's `timestamp` is written. */
  timestamp(): string {
    return beijingTime(this.now());
  }
}

export function beijingTime(ms: number): string {
  return new Date(ms + BEIJING_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');
}

/** The channel's keys, parsed; 400 naming the field when one is not an RSA key of 2048 bits or more. */
export function readKeys(s: Pick<AlipaySettings, 'app_private_key' | 'alipay_public_key'>): { privateKey: KeyObject; publicKey: KeyObject } {
  const privateKey = rsaKey('app_private_key', () => createPrivateKey(s.app_private_key));
  const publicKey = rsaKey('alipay_public_key', () => createPublicKey(s.alipay_public_key));
  if (publicKey.type !== 'public') throw Errors.invalidRequest('alipay_public_key must be a public key (Alipay\'s, "-----BEGIN PUBLIC KEY-----")');
  return { privateKey, publicKey };
}

function rsaKey(field: string, read: () => KeyObject): KeyObject {
  let key: KeyObject;
  try {
    key = read();
  } catch {
    throw Errors.invalidRequest(`${field} is not a readable PEM key`);
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (key.asymmetricKeyType !== 'rsa' || bits < 2048) throw Errors.invalidRequest(`${field} must be an RSA key of at least 2048 bits (RSA2)`);
  return key;
}

/** Minor units of CNY (fen) as Alipay writes an amount in yuan: "6.00". */
export function yuan(fen: number): string {
  return `${Math.floor(fen / 100)}.${String(fen % 100).padStart(2, '0')}`;
}

/** An amount in yuan as Alipay writes it ("6.00", "6.5", "6") in fen; null when it is not one. */
export function fen(amount: string | undefined): number | null {
  const m = amount === undefined ? null : /^(\d{1,12})(?:\.(\d{1,2}))?$/.exec(amount);
  if (!m) return null;
  return Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
}
