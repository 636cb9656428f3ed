import { createCipheriv, createHash, createSign, createVerify, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * WeChat Pay API v3 played by the test: a real HTTP server on 127.0.0.1 with its own RSA key
 * (the "WeChat Pay public key" of public-key mode) and the merchant's key pair (the service
 * holds the private half). Implemented from WeChat Pay's documentation, independently of the
 * service's code: it checks the merchant's WECHATPAY2-SHA256-RSA2048 signature of every
 * request (refusing 401 SIGN_ERROR), signs every answer, keeps transactions and refunds,
 * serves queries, close and refunds, and sends signed, AES-256-GCM encrypted callbacks.
 */
export interface Transaction {
  appid: string;
  mchid: string;
  out_trade_no: string;
  transaction_id: string;
  trade_type: 'NATIVE' | 'MWEB' | 'APP';
  trade_state: 'NOTPAY' | 'SUCCESS' | 'CLOSED' | 'REFUND';
  amount: { total: number; currency: string; payer_total?: number; payer_currency?: string };
  notify_url: string;
  answer: Record<string, string>;
  request: Record<string, any>;
}

export interface Refund {
  out_refund_no: string;
  refund_id: string;
  out_trade_no: string;
  transaction_id: string;
  status: 'PROCESSING' | 'SUCCESS' | 'CLOSED' | 'ABNORMAL';
  amount: { refund: number; total: number; currency: string };
  notify_url: string | undefined;
}

/** How the next refund requests are answered. */
export type RefundBehaviour = { kind: 'processing' } | { kind: 'success' } | { kind: 'refuse'; status: number; code: string; message: string };

export interface CallbackOptions {
  /** Sign with this key instead of WeChat Pay's (a forger). */
  signingKey?: KeyObject;
  serial?: string;
  /** Seconds since the epoch (default: the clock's now). */
  timestamp?: number;
  /** Changes the body after signing. */
  tamper?: (body: string) => string;
  apiV3Key?: string;
}

function keyPair() {
  return generateKeyPairSync('rsa', { modulusLength: 2048 });
}

export class WechatPayStandIn {
  readonly mchid = '1900009191';
  readonly appid = 'wxd678efh567hg6787';
  readonly merchantSerial = '5157F09EFDC096DE15EBE81A47057A7232F1B8E1';
  readonly publicKeyId = 'PUB_KEY_ID_0119000091912025010100000000000001';
  readonly apiV3Key = randomBytes(16).toString('hex');
  readonly merchant = keyPair();
  readonly platform = keyPair();
  readonly transactions = new Map<string, Transaction>();
  readonly refunds = new Map<string, Refund>();
  /** Every request: method, path, body, whether its signature verified. */
  readonly requests: { method: string; url: string; body: any; signed: boolean }[] = [];
  refundBehaviour: RefundBehaviour = { kind: 'processing' };
  /** Trade bills by day (YYYY-MM-DD): the successful payments WeChat Pay lists. */
  readonly bills = new Map<string, { transaction_id: string; out_trade_no: string; total: number }[]>();
  /** Where a notify_url's callbacks are delivered (the test maps its public address to the service). */
  deliverTo: (notifyUrl: string) => string = (u) => u;
  private server: http.Server | null = null;
  url = '';
  private seq = 0;

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** The channel settings of a game using this merchant (PUT .../channels/wechat). */
  settings(overrides: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      enabled: true,
      mchid: this.mchid,
      appid: this.appid,
      merchant_serial_no: this.merchantSerial,
      merchant_private_key: this.merchant.privateKey.export({ type: 'pkcs8', format: 'pem' }),
      api_v3_key: this.apiV3Key,
      wechatpay_public_key_id: this.publicKeyId,
      wechatpay_public_key: this.platform.publicKey.export({ type: 'spki', format: 'pem' }),
      ...overrides,
    };
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** The player pays: the transaction becomes SUCCESS (of `amount` when given). */
  pay(outTradeNo: string, amount?: number): Transaction {
    const t = this.transactions.get(outTradeNo);
    if (!t) throw new Error(`no transaction ${outTradeNo}`);
    t.trade_state = 'SUCCESS';
    if (amount !== undefined) t.amount.total = amount;
    t.amount.payer_total = t.amount.total;
    t.amount.payer_currency = t.amount.currency;
    return t;
  }

  /** The transaction as WeChat Pay's query and payment callback describe it. */
  resourceOf(t: Transaction): Record<string, unknown> {
    return {
      appid: t.appid,
      mchid: t.mchid,
      out_trade_no: t.out_trade_no,
      transaction_id: t.transaction_id,
      trade_type: t.trade_type,
      trade_state: t.trade_state,
      trade_state_desc: t.trade_state === 'SUCCESS' ? '支付成功' : '',
      bank_type: 'OTHERS',
      attach: '',
      success_time: '2026-01-01T10:00:00+08:00',
      payer: { openid: 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o' },
      amount: t.amount,
    };
  }

  refundResourceOf(r: Refund): Record<string, unknown> {
    return {
      mchid: this.mchid,
      out_trade_no: r.out_trade_no,
      transaction_id: r.transaction_id,
      out_refund_no: r.out_refund_no,
      refund_id: r.refund_id,
      refund_status: r.status,
      success_time: r.status === 'SUCCESS' ? '2026-01-01T11:00:00+08:00' : undefined,
      user_received_account: '支付用户零钱',
      amount: { total: r.amount.total, refund: r.amount.refund, payer_total: r.amount.total, payer_refund: r.amount.refund },
    };
  }

  /** A refund made in the merchant portal (not requested through the API). */
  portalRefund(outTradeNo: string, refund?: number): Refund {
    const t = this.transactions.get(outTradeNo)!;
    const r: Refund = {
      out_refund_no: `portal${++this.seq}${randomBytes(4).toString('hex')}`,
      refund_id: `50300${Date.now()}${++this.seq}`,
      out_trade_no: outTradeNo,
      transaction_id: t.transaction_id,
      status: 'SUCCESS',
      amount: { refund: refund ?? t.amount.total, total: t.amount.total, currency: 'CNY' },
      notify_url: t.notify_url,
    };
    this.refunds.set(r.out_refund_no, r);
    t.trade_state = 'REFUND';
    return r;
  }

  /** Sends a callback of `eventType` with `resource` (encrypted) to `url`; the service's answer. */
  async callback(url: string, eventType: string, resource: Record<string, unknown>, o: CallbackOptions = {}): Promise<{ status: number; body: any; text: string }> {
    const { body, headers } = this.callbackRequest(eventType, resource, o);
    const res = await fetch(this.deliverTo(url), { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await res.text();
    return { status: res.status, text, body: text ? JSON.parse(text) : undefined };
  }

  /** The body and Wechatpay-* headers of a callback of `eventType` with `resource` (encrypted). */
  callbackRequest(eventType: string, resource: Record<string, unknown>, o: CallbackOptions = {}): { body: string; headers: Record<string, string> } {
    const nonce = randomBytes(6).toString('hex');
    const associated = eventType.startsWith('REFUND') ? 'refund' : 'transaction';
    const cipher = createCipheriv('aes-256-gcm', Buffer.from(o.apiV3Key ?? this.apiV3Key, 'utf8'), Buffer.from(nonce, 'utf8'));
    cipher.setAAD(Buffer.from(associated, 'utf8'));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(resource), 'utf8'), cipher.final(), cipher.getAuthTag()]).toString('base64');
    let body = JSON.stringify({
      id: `EV-${randomBytes(8).toString('hex')}`,
      create_time: '2026-01-01T10:00:00+08:00',
      resource_type: 'encrypt-resource',
      event_type: eventType,
      summary: eventType.startsWith('REFUND') ? '退款成功' : '支付成功',
      resource: { original_type: associated, algorithm: 'AEAD_AES_256_GCM', ciphertext, associated_data: associated, nonce },
    });
    const headers = this.signedHeaders(body, o);
    if (o.tamper) body = o.tamper(body);
    return { body, headers };
  }

  /** Sends the payment callback of a transaction to the notify_url it was created with. */
  paymentCallback(t: Transaction, o: CallbackOptions & { resource?: Record<string, unknown> } = {}) {
    return this.callback(t.notify_url, 'TRANSACTION.SUCCESS', { ...this.resourceOf(t), ...o.resource }, o);
  }

  refundCallback(r: Refund, eventType = 'REFUND.SUCCESS', url?: string) {
    return this.callback(url ?? r.notify_url ?? this.transactions.get(r.out_trade_no)!.notify_url, eventType, this.refundResourceOf(r));
  }

  signedHeaders(body: string, o: CallbackOptions = {}): Record<string, string> {
    const timestamp = String(o.timestamp ?? Math.floor(this.now() / 1000));
    const nonce = randomBytes(16).toString('hex');
    const signature = createSign('RSA-SHA256').update(`${timestamp}\n${nonce}\n${body}\n`).sign(o.signingKey ?? this.platform.privateKey, 'base64');
    return { 'wechatpay-timestamp': timestamp, 'wechatpay-nonce': nonce, 'wechatpay-signature': signature, 'wechatpay-serial': o.serial ?? this.publicKeyId };
  }

  /** Checks the merchant's Authorization as WeChat Pay does. */
  private verifyMerchant(method: string, url: string, body: string, auth: string | undefined): boolean {
    const m = /^WECHATPAY2-SHA256-RSA2048 (.*)$/.exec(auth ?? '');
    if (!m) return false;
    const fields = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (fields.mchid !== this.mchid || fields.serial_no !== this.merchantSerial) return false;
    if (Math.abs(Math.floor(this.now() / 1000) - Number(fields.timestamp)) > 300) return false;
    const message = `${method}\n${url}\n${fields.timestamp}\n${fields.nonce_str}\n${body}\n`;
    return createVerify('RSA-SHA256').update(message).verify(this.merchant.publicKey, fields.signature ?? '', 'base64');
  }

  private answer(res: http.ServerResponse, status: number, data?: object): void {
    const body = data === undefined ? '' : JSON.stringify(data);
    res.writeHead(status, { ...(body ? { 'content-type': 'application/json' } : {}), ...this.signedHeaders(body) });
    res.end(body);
  }

  private handle(req: http.IncomingMessage, raw: string, res: http.ServerResponse): void {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const signedOk = this.verifyMerchant(method, url, raw, req.headers.authorization);
    const body = raw ? JSON.parse(raw) : undefined;
    this.requests.push({ method, url, body, signed: signedOk });
    if (!signedOk) return this.answer(res, 401, { code: 'SIGN_ERROR', message: '签名错误' });
    const path = url.split('?')[0]!;
    let m: RegExpExecArray | null;
    if (method === 'POST' && (m = /^\/v3\/pay\/transactions\/(native|h5|app)$/.exec(path))) return this.create(res, m[1] as 'native' | 'h5' | 'app', body);
    if (method === 'GET' && (m = /^\/v3\/pay\/transactions\/out-trade-no\/([^/]+)$/.exec(path))) {
      const t = this.transactions.get(decodeURIComponent(m[1]!));
      if (!url.includes(`mchid=${this.mchid}`)) return this.answer(res, 400, { code: 'PARAM_ERROR', message: 'mchid' });
      return t ? this.answer(res, 200, this.resourceOf(t)) : this.answer(res, 404, { code: 'ORDER_NOT_EXIST', message: '订单不存在' });
    }
    if (method === 'POST' && (m = /^\/v3\/pay\/transactions\/out-trade-no\/([^/]+)\/close$/.exec(path))) {
      const t = this.transactions.get(decodeURIComponent(m[1]!));
      if (body?.mchid !== this.mchid) return this.answer(res, 400, { code: 'PARAM_ERROR', message: 'mchid' });
      if (t?.trade_state === 'SUCCESS') return this.answer(res, 400, { code: 'ORDER_PAID', message: '订单已支付' });
      if (t) t.trade_state = 'CLOSED';
      return this.answer(res, 204);
    }
    if (method === 'POST' && path === '/v3/refund/domestic/refunds') return this.refund(res, body);
    if (method === 'GET' && path === '/v3/bill/tradebill') {
      const q = new URL(url, 'http://x').searchParams;
      const bill = this.bills.get(q.get('bill_date') ?? '');
      if (!bill || q.get('bill_type') !== 'SUCCESS') return this.answer(res, 400, { code: 'NO_STATEMENT_EXIST', message: '账单文件不存在' });
      const file = this.billFile(bill);
      return this.answer(res, 200, { hash_type: 'SHA1', hash_value: createHash('sha1').update(file).digest('hex'), download_url: `${this.url}/v3/billdownload/file?token=${q.get('bill_date')}` });
    }
    if (method === 'GET' && path === '/v3/billdownload/file') {
      // The file itself is not signed (its SHA1 was, in the answer that named it).
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return void res.end(this.billFile(this.bills.get(new URL(url, 'http://x').searchParams.get('token') ?? '') ?? []));
    }
    if (method === 'GET' && (m = /^\/v3\/refund\/domestic\/refunds\/([^/]+)$/.exec(path))) {
      const r = this.refunds.get(decodeURIComponent(m[1]!));
      return r ? this.answer(res, 200, this.refundAnswer(r)) : this.answer(res, 404, { code: 'RESOURCE_NOT_EXISTS', message: '退款单不存在' });
    }
    return this.answer(res, 404, { code: 'NOT_FOUND', message: 'no such API' });
  }

  private create(res: http.ServerResponse, kind: 'native' | 'h5' | 'app', b: any): void {
    if (b?.appid !== this.appid || b?.mchid !== this.mchid) return this.answer(res, 400, { code: 'PARAM_ERROR', message: 'appid/mchid' });
    if (!Number.isSafeInteger(b.amount?.total) || b.amount.total < 1 || b.amount.currency !== 'CNY') return this.answer(res, 400, { code: 'PARAM_ERROR', message: 'amount' });
    if (typeof b.out_trade_no !== 'string' || typeof b.notify_url !== 'string' || typeof b.description !== 'string') return this.answer(res, 400, { code: 'PARAM_ERROR', message: 'fields' });
    if (kind === 'h5' && !b.scene_info?.payer_client_ip) return this.answer(res, 400, { code: 'PARAM_ERROR', message: 'scene_info.payer_client_ip' });
    const before = this.transactions.get(b.out_trade_no);
    if (before && before.trade_state !== 'NOTPAY') return this.answer(res, 400, { code: 'ORDERPAID', message: '订单已支付或已关闭' });
    const id = randomBytes(8).toString('hex');
    const answer: Record<string, string> = kind === 'native' ? { code_url: `weixin://wxpay/bizpayurl?pr=${id}` } : kind === 'h5' ? { h5_url: `https://wx.tenpay.com/cgi-bin/mmpayweb-bin/checkmweb?prepay_id=wx${id}` } : { prepay_id: `wx${id}` };
    this.transactions.set(b.out_trade_no, {
      appid: b.appid,
      mchid: b.mchid,
      out_trade_no: b.out_trade_no,
      transaction_id: before?.transaction_id ?? `42000${Date.now()}${++this.seq}`,
      trade_type: kind === 'native' ? 'NATIVE' : kind === 'h5' ? 'MWEB' : 'APP',
      trade_state: 'NOTPAY',
      amount: { total: b.amount.total, currency: 'CNY' },
      notify_url: b.notify_url,
      answer,
      request: b,
    });
    this.answer(res, 200, answer);
  }

  private refund(res: http.ServerResponse, b: any): void {
    const t = [...this.transactions.values()].find((x) => x.transaction_id === b?.transaction_id || x.out_trade_no === b?.out_trade_no);
    if (!t) return this.answer(res, 404, { code: 'RESOURCE_NOT_EXISTS', message: '订单不存在' });
    if (typeof b.out_refund_no !== 'string' || b.amount?.total !== t.amount.total || !Number.isSafeInteger(b.amount?.refund)) return this.answer(res, 400, { code: 'PARAM_ERROR', message: 'amount' });
    const behaviour = this.refundBehaviour;
    if (behaviour.kind === 'refuse') return this.answer(res, behaviour.status, { code: behaviour.code, message: behaviour.message });
    const r: Refund = {
      out_refund_no: b.out_refund_no,
      refund_id: this.refunds.get(b.out_refund_no)?.refund_id ?? `50300${Date.now()}${++this.seq}`,
      out_trade_no: t.out_trade_no,
      transaction_id: t.transaction_id,
      status: behaviour.kind === 'success' ? 'SUCCESS' : 'PROCESSING',
      amount: { refund: b.amount.refund, total: b.amount.total, currency: 'CNY' },
      notify_url: b.notify_url,
    };
    this.refunds.set(r.out_refund_no, r);
    this.answer(res, 200, this.refundAnswer(r));
  }

  /** A trade bill as WeChat Pay writes it: CSV, every field prefixed with a backtick, a summary at the end. */
  billFile(rows: { transaction_id: string; out_trade_no: string; total: number }[]): Buffer {
    const yuan = (fen: number) => `${Math.floor(fen / 100)}.${String(fen % 100).padStart(2, '0')}`;
    const lines = ['交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注'];
    for (const r of rows) {
      const f = ['2026-01-01 10:00:00', this.appid, this.mchid, '0', '', r.transaction_id, r.out_trade_no, 'oUpF8uMuAJO_M2pxb1Q9zNjWeS6o', 'NATIVE', 'SUCCESS', 'OTHERS', 'CNY', yuan(r.total), '0.00', '0', '0', '0.00', '0.00', '', '', 'gem_60 x1', '', '0.04000', '0.60%', yuan(r.total), '0.00', ''];
      lines.push(f.map((v) => `\`${v}`).join(','));
    }
    lines.push('总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,申请退款总金额');
    const sum = rows.reduce((n, r) => n + r.total, 0);
    lines.push([rows.length, yuan(sum), '0.00', '0.00', '0.00000', yuan(sum), '0.00'].map((v) => `\`${v}`).join(','));
    return Buffer.from(`${lines.join('\r\n')}\r\n`, 'utf8');
  }

  private refundAnswer(r: Refund): Record<string, unknown> {
    return {
      refund_id: r.refund_id,
      out_refund_no: r.out_refund_no,
      transaction_id: r.transaction_id,
      out_trade_no: r.out_trade_no,
      channel: 'ORIGINAL',
      user_received_account: '支付用户零钱',
      status: r.status,
      amount: { total: r.amount.total, refund: r.amount.refund, currency: 'CNY', payer_total: r.amount.total, payer_refund: r.amount.refund },
    };
  }
}
