import { createHash, type KeyObject } from 'node:crypto';
import { request } from 'undici';
import type { Clock } from '../../lib/clock.js';
import { authorization, privateKey, publicKey, signedHeaders, verificationFailure, type MerchantKey } from './crypto.js';
import type { WechatSettings } from './settings.js';

/** WeChat Pay answered 4xx: a definite refusal (`code`, `message` as WeChat Pay says them). */
export class WechatPayRefusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface WechatAnswer {
  status: number;
  data: Record<string, unknown>;
}

/** Parsed keys by PEM: parsing an RSA key costs more than using it. */
const MAX_KEYS = 1000;
const TIMEOUT_MS = 10_000;

/**
 * Requests to WeChat Pay API v3 at WECHATPAY_BASE_URL: each signed with the merchant key, each
 * answer's signature verified with the configured WeChat Pay public key before it is believed.
 * A 4xx answer throws WechatPayRefusal; no answer, a 5xx or an answer that does not verify
 * throws a plain Error (nothing is known: try again later).
 */
export class WechatPayClient {
  private readonly keys = new Map<string, KeyObject>();

  constructor(
    private readonly baseUrl: string,
    private readonly clock: Clock,
  ) {}

  async call(s: WechatSettings, method: 'GET' | 'POST', path: string, body?: object): Promise<WechatAnswer> {
    const text = body === undefined ? '' : JSON.stringify(body);
    const merchant: MerchantKey = { mchid: s.mchid, serialNo: s.merchant_serial_no, key: this.key(s.merchant_private_key, privateKey) };
    const now = Math.floor(this.clock.now() / 1000);
    const res = await request(`${this.baseUrl}${path}`, {
      method,
      headers: {
        authorization: authorization(merchant, method, path, text, String(now)),
        accept: 'application/json',
        'user-agent': 'combo-game-platform',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : text,
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    const answer = await res.body.text();
    if (res.statusCode >= 500) throw new Error(`WeChat Pay answered ${res.statusCode} to ${method} ${path.split('?')[0]}`);
    const failure = verificationFailure(signedHeaders(res.headers), answer, s.wechatpay_public_key_id, this.key(s.wechatpay_public_key, publicKey), Math.floor(this.clock.now() / 1000));
    if (failure) throw new Error(`WeChat Pay's answer to ${method} ${path.split('?')[0]} is refused: ${failure}`);
    let data: Record<string, unknown> = {};
    if (answer.length > 0) {
      const parsed: unknown = JSON.parse(answer);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) data = parsed as Record<string, unknown>;
    }
    if (res.statusCode >= 400) throw new WechatPayRefusal(res.statusCode, String(data.code ?? 'UNKNOWN'), String(data.message ?? `WeChat Pay answered ${res.statusCode}`));
    return { status: res.statusCode, data };
  }

  /**
   * Downloads a bill file WeChat Pay named in a verified answer (`download_url`): a signed GET,
   * on WECHATPAY_BASE_URL's origin only; its content is checked against the SHA1 the answer gave
   * (the file itself carries no signature).
   */
  async download(s: WechatSettings, downloadUrl: string, sha1: string): Promise<Buffer> {
    const u = new URL(downloadUrl);
    if (u.origin !== new URL(this.baseUrl).origin) throw new Error(`WeChat Pay's download_url is not on ${new URL(this.baseUrl).origin}`);
    const path = u.pathname + u.search;
    const merchant: MerchantKey = { mchid: s.mchid, serialNo: s.merchant_serial_no, key: this.key(s.merchant_private_key, privateKey) };
    const res = await request(`${u.origin}${path}`, {
      method: 'GET',
      headers: { authorization: authorization(merchant, 'GET', path, '', String(Math.floor(this.clock.now() / 1000))), 'user-agent': 'combo-game-platform' },
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
    });
    const file = Buffer.from(await res.body.arrayBuffer());
    if (res.statusCode !== 200) throw new Error(`WeChat Pay answered ${res.statusCode} to the bill download`);
    if (createHash('sha1').update(file).digest('hex').toLowerCase() !== sha1.toLowerCase()) throw new Error("the bill file's SHA1 is not the one WeChat Pay gave");
    return file;
  }

  /** The merchant key and WeChat Pay's key of a game's settings, parsed once. */
  key(pem: string, parse: (pem: string) => KeyObject): KeyObject {
    let k = this.keys.get(pem);
    if (!k) {
      if (this.keys.size >= MAX_KEYS) this.keys.clear();
      k = parse(pem);
      this.keys.set(pem, k);
    }
    return k;
  }
}
