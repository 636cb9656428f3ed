import { createSign, createVerify, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { zipSync } from 'fflate';
import iconv from 'iconv-lite';

/**
 * Alipay as the tests play it: a local OpenAPI gateway (ALIPAY_GATEWAY_URL) with its own RSA
 * key pair. It checks the RSA2 signature of every request with the application's public key
 * (the test makes the application's key pair too), answers alipay.trade.query, .refund and
 * .close as signed JSON (`<method>_response` and `sign`, RSA2 over the response object's exact
 * text), and sends async notifies as form posts signed with its key. The buyer's side (page,
 * WAP or App pay) is `buy`: it checks the signed request the service handed to the client and
 * records the trade as paid.
 */
export interface AlipayApp {
  appId: string;
  /** PEM (PKCS#8): the channel's app_private_key. */
  privateKeyPem: string;
  publicKey: KeyObject;
}

export type TradeStatus = 'WAIT_BUYER_PAY' | 'TRADE_SUCCESS' | 'TRADE_FINISHED' | 'TRADE_CLOSED';

export interface Trade {
  app_id: string;
  out_trade_no: string;
  trade_no: string;
  total_amount: string;
  trade_status: TradeStatus;
  notify_url?: string;
  refund_fee?: string;
  /** out_request_no of the refunds accepted. */
  refunds: string[];
}

export interface GatewayCall {
  method: string;
  app_id: string;
  biz: Record<string, unknown>;
  params: Record<string, string>;
}

/** A line of a day's trade bill: a trade (交易, the default) or a refund (退款). */
export interface BillLine {
  trade_no: string;
  out_trade_no: string;
  /** Yuan as Alipay writes it: "6.00". */
  total_amount: string;
  kind?: '交易' | '退款';
}

/** A business refusal Alipay answers (code 40004), e.g. ACQ.TRADE_HAS_CLOSE. */
export interface Refusal {
  sub_code: string;
  sub_msg: string;
}

const BEIJING_OFFSET_MS = 8 * 3600_000;
const beijing = (ms: number) => new Date(ms + BEIJING_OFFSET_MS).toISOString().slice(0, 19).replace('T', ' ');

export function makeAlipayApp(appId = `2021${randomBytes(6).readUIntBE(0, 6).toString().padStart(12, '0')}`): AlipayApp {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { appId, privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, publicKey };
}

/**
 * Alipay's signing content: the fields sorted, k=v joined with &, without `sign`; a request's
 * without its empty fields, a notify's without `sign_type` (alipay-sdk's checkNotifySign).
 */
export function signContent(fields: Record<string, string>, notify = false): string {
  return Object.keys(fields)
    .filter((k) => k !== 'sign' && (notify ? k !== 'sign_type' : fields[k] !== ''))
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join('&');
}

export function rsa2(content: string, key: KeyObject | string): string {
  return createSign('RSA-SHA256').update(content, 'utf8').sign(key, 'base64');
}

/** Whether a request's parameters carry the application's RSA2 signature. */
export function signedByApp(params: Record<string, string>, app: Pick<AlipayApp, 'publicKey'>): boolean {
  if (params.sign_type !== 'RSA2' || !params.sign) return false;
  return createVerify('RSA-SHA256').update(signContent(params), 'utf8').verify(app.publicKey, params.sign, 'base64');
}

/** The parameters of a page URL (query) or an App order string. */
export function paramsOf(urlOrOrderString: string): Record<string, string> {
  const query = urlOrOrderString.includes('?') ? urlOrOrderString.slice(urlOrOrderString.indexOf('?') + 1) : urlOrOrderString;
  return Object.fromEntries(new URLSearchParams(query));
}

export class AlipayStandIn {
  readonly keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  /** PEM: the channel's alipay_public_key. */
  readonly publicKeyPem = this.keys.publicKey.export({ type: 'spki', format: 'pem' }) as string;
  readonly apps = new Map<string, AlipayApp>();
  readonly trades = new Map<string, Trade>();
  /** Every request with a valid signature, in order. */
  readonly calls: GatewayCall[] = [];
  /** Requests refused (bad signature, unknown app, stale timestamp): must stay empty. */
  readonly violations: string[] = [];
  /** The next refunds are refused with these, in order. */
  readonly refuseRefunds: Refusal[] = [];
  /** Trade bills by day (YYYY-MM-DD, Beijing time), of every application of the merchant. */
  readonly bills = new Map<string, BillLine[]>();
  /** The next bill downloads are answered 503 (the download address does not serve). */
  failDownloads = 0;
  /** Bill downloads served (the fileId of each). */
  readonly downloads: string[] = [];
  /** The next requests are carried out but never answered (the connection is cut): a lost answer. */
  unanswered = 0;
  private server: http.Server | null = null;
  private seq = 0;
  url = '';

  constructor(private readonly now: () => number = Date.now) {}

  /** Listens on `port` (0: any free one; a port given: started again after close). */
  async start(port = 0): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.answer(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/gateway.do`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  addApp(app: AlipayApp): void {
    this.apps.set(app.appId, app);
  }

  /**
   * The buyer pays what the service handed the client (a page/WAP URL or an App order string):
   * the request's signature and biz_content are checked, and the trade is recorded paid.
   */
  buy(urlOrOrderString: string, status: TradeStatus = 'TRADE_SUCCESS'): Trade {
    const params = paramsOf(urlOrOrderString);
    const app = this.checkRequest(params);
    if (!app) throw new Error(`the payment request is refused: ${this.violations.at(-1)}`);
    const biz = JSON.parse(params.biz_content ?? '{}') as Record<string, string>;
    const trade: Trade = {
      app_id: app.appId,
      out_trade_no: biz.out_trade_no!,
      trade_no: this.trades.get(biz.out_trade_no!)?.trade_no ?? `2026${String(++this.seq).padStart(24, '0')}`,
      total_amount: biz.total_amount!,
      trade_status: status,
      notify_url: params.notify_url,
      refunds: [],
    };
    this.trades.set(trade.out_trade_no, trade);
    return trade;
  }

  /** The async notify of a trade's state, as Alipay posts it (fields override or add to it). */
  notifyFields(trade: Trade, fields: Record<string, string> = {}): Record<string, string> {
    const now = beijing(this.now());
    return {
      notify_time: now,
      notify_type: 'trade_status_sync',
      notify_id: randomBytes(16).toString('hex'),
      charset: 'utf-8',
      version: '1.0',
      app_id: trade.app_id,
      auth_app_id: trade.app_id,
      trade_no: trade.trade_no,
      out_trade_no: trade.out_trade_no,
      trade_status: trade.trade_status,
      total_amount: trade.total_amount,
      receipt_amount: trade.total_amount,
      buyer_id: '2088102177846880',
      subject: 'gem_60',
      gmt_create: now,
      gmt_payment: now,
      ...(trade.refund_fee ? { refund_fee: trade.refund_fee, gmt_refund: `${now}.000` } : {}),
      ...fields,
    };
  }

  /** Signs `fields` as Alipay signs a notify (RSA2, without sign and sign_type). */
  sign(fields: Record<string, string>, key: KeyObject = this.keys.privateKey): Record<string, string> {
    return { ...fields, sign_type: 'RSA2', sign: rsa2(signContent(fields, true), key) };
  }

  /** Posts a signed notify to `url` (the trade's notify_url by default). */
  async notify(trade: Trade, fields: Record<string, string> = {}, url = trade.notify_url!): Promise<{ status: number; text: string; contentType: string | null }> {
    return postForm(url, this.sign(this.notifyFields(trade, fields)));
  }

  /** Verifies a request's signature with its application's key and its timestamp (Beijing time, 15 minutes). */
  private checkRequest(params: Record<string, string>): AlipayApp | null {
    const app = params.app_id ? this.apps.get(params.app_id) : undefined;
    if (!app) return this.violation(`unknown app_id ${params.app_id}`);
    if (!signedByApp(params, app)) return this.violation(`bad signature of ${params.method}`);
    const at = Date.parse(`${params.timestamp?.replace(' ', 'T')}+08:00`);
    if (!(Math.abs(at - this.now()) <= 15 * 60_000)) return this.violation(`timestamp ${params.timestamp} is not Beijing time now`);
    if (params.charset !== 'utf-8' || params.version !== '1.0') return this.violation('charset or version');
    return app;
  }

  private violation(what: string): null {
    this.violations.push(what);
    return null;
  }

  private answer(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const params: Record<string, string> = { ...Object.fromEntries(url.searchParams), ...Object.fromEntries(new URLSearchParams(body)) };
    if (req.method === 'GET' && url.pathname === '/downloadBillFile.resource') return this.billDownload(url, res);
    const app = req.method === 'POST' && url.pathname === '/gateway.do' ? this.checkRequest(params) : null;
    if (!app) {
      const error = { code: '40002', msg: 'Invalid Arguments', sub_code: 'isv.invalid-signature', sub_msg: '验签出错' };
      return this.reply(res, 'error_response', error);
    }
    const biz = JSON.parse(params.biz_content ?? '{}') as Record<string, string>;
    this.calls.push({ method: params.method!, app_id: app.appId, biz, params });
    const key = `${params.method!.replaceAll('.', '_')}_response`;
    const trade = this.trades.get(biz.out_trade_no ?? '');
    const mine = trade && trade.app_id === app.appId ? trade : undefined;
    const notExist = { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_NOT_EXIST', sub_msg: '交易不存在' };
    switch (params.method) {
      case 'alipay.trade.query':
        return this.reply(res, key, mine ? { code: '10000', msg: 'Success', trade_no: mine.trade_no, out_trade_no: mine.out_trade_no, trade_status: mine.trade_status, total_amount: mine.total_amount, buyer_logon_id: 'buy***@example.com' } : notExist);
      case 'alipay.trade.close':
        if (!mine) return this.reply(res, key, notExist);
        if (mine.trade_status !== 'WAIT_BUYER_PAY') return this.reply(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_STATUS_ERROR', sub_msg: '交易状态不合法' });
        mine.trade_status = 'TRADE_CLOSED';
        return this.reply(res, key, { code: '10000', msg: 'Success', trade_no: mine.trade_no, out_trade_no: mine.out_trade_no });
      case 'alipay.trade.refund':
        return this.reply(res, key, this.refund(mine, biz) ?? notExist);
      case 'alipay.trade.fastpay.refund.query': {
        if (!mine) return this.reply(res, key, notExist);
        const known = mine.refunds.includes(biz.out_request_no ?? '');
        const ids = { trade_no: mine.trade_no, out_trade_no: mine.out_trade_no, out_request_no: biz.out_request_no ?? '' };
        return this.reply(res, key, known ? { code: '10000', msg: 'Success', ...ids, refund_amount: mine.refund_fee ?? '', total_amount: mine.total_amount, refund_status: 'REFUND_SUCCESS' } : { code: '10000', msg: 'Success', ...ids });
      }
      case 'alipay.data.dataservice.bill.downloadurl.query': {
        if (biz.bill_type !== 'trade' || !this.bills.has(biz.bill_date ?? '')) return this.reply(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'isp.bill_not_exist', sub_msg: '账单不存在' });
        const day = (biz.bill_date ?? '').replaceAll('-', '');
        const q = new URLSearchParams({ bizType: 'trade', userId: '20885106898758880156', fileType: 'csv.zip', bizDates: day, downloadFileName: `20885106898758880156_${day}.csv.zip`, fileId: biz.bill_date ?? '' });
        return this.reply(res, key, { code: '10000', msg: 'Success', bill_download_url: `${new URL(this.url).origin}/downloadBillFile.resource?${q}` });
      }
      default:
        return this.reply(res, key, { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.INVALID_METHOD', sub_msg: `no ${params.method} here` });
    }
  }

  private refund(trade: Trade | undefined, biz: Record<string, string>): Record<string, string> | null {
    if (!trade) return null;
    const refused = this.refuseRefunds.shift();
    if (refused) return { code: '40004', msg: 'Business Failed', ...refused };
    // A refund asked again under its out_request_no is answered without refunding twice: no money moves this time.
    const repeated = trade.refunds.includes(biz.out_request_no ?? '');
    if (!repeated) {
      if (trade.trade_status !== 'TRADE_SUCCESS') return { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.TRADE_STATUS_ERROR', sub_msg: '交易状态不合法' };
      if (biz.refund_amount !== trade.total_amount) return { code: '40004', msg: 'Business Failed', sub_code: 'ACQ.REFUND_AMT_NOT_EQUAL_TOTAL', sub_msg: '退款金额超限' };
      trade.refunds.push(biz.out_request_no ?? '');
      trade.refund_fee = biz.refund_amount;
      trade.trade_status = 'TRADE_CLOSED';
    }
    return { code: '10000', msg: 'Success', trade_no: trade.trade_no, out_trade_no: trade.out_trade_no, fund_change: repeated ? 'N' : 'Y', refund_fee: trade.refund_fee ?? '0.00', buyer_logon_id: 'buy***@example.com' };
  }

  /** GET of a bill_download_url: the day's bill as Alipay serves it (a zip of GBK CSV files). */
  private billDownload(url: URL, res: http.ServerResponse): void {
    const date = url.searchParams.get('fileId') ?? '';
    const lines = this.bills.get(date);
    if (!lines) return void res.writeHead(404).end();
    if (this.failDownloads > 0) {
      this.failDownloads--;
      return void res.writeHead(503).end();
    }
    this.downloads.push(date);
    res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(billZip(date, lines));
  }

  private reply(res: http.ServerResponse, key: string, payload: Record<string, string>): void {
    if (this.unanswered > 0) {
      this.unanswered--;
      res.socket?.destroy();
      return;
    }
    const inner = JSON.stringify(payload);
    const body = `{"${key}":${inner},"sign":"${rsa2(inner, this.keys.privateKey)}"}`;
    res.writeHead(200, { 'content-type': 'application/json;charset=utf-8' }).end(body);
  }
}

export async function postForm(url: string, fields: Record<string, string>, contentType = 'application/x-www-form-urlencoded; charset=utf-8'): Promise<{ status: number; text: string; contentType: string | null }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body: new URLSearchParams(fields).toString() });
  return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') };
}

/**
 * A trade bill as Alipay's bill download serves it: a zip of two GBK CSV files, the business
 * details (comment lines, header, one tab-padded line per trade or refund, totals) and their
 * summary.
 */
export function billZip(date: string, lines: BillLine[]): Buffer {
  const user = '20885106898758880156';
  const day = date.replaceAll('-', '');
  const [y, m, d] = date.split('-');
  const pad = (fields: string[]) => fields.map((f) => `${f}\t`).join(',');
  const header = '支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,退款批次号/请求号,服务费（元）,分润（元）,备注';
  const rows = lines.map((l) => {
    const received = l.kind === '退款' ? `-${l.total_amount}` : l.total_amount;
    return pad([l.trade_no, l.out_trade_no, l.kind ?? '交易', 'gem_60', `${date} 10:00:00`, `${date} 10:00:05`, '', '', '', '', 'buy***@example.com', l.total_amount, received, '0.00', '0.00', '0.00', '0.00', '0.00', '', '0.00', '0.00', '', '0.00', '0.00', '']);
  });
  const details = [
    '#支付宝业务明细查询',
    `#账号：[${user}]`,
    `#起始日期：[${y}年${m}月${d}日 00:00:00]   终止日期：[${y}年${m}月${d}日 23:59:59]`,
    '#-----------------------------------------业务明细列表----------------------------------------',
    header,
    ...rows,
    '#-----------------------------------------业务明细列表结束------------------------------------',
    `#交易合计：${lines.filter((l) => l.kind !== '退款').length}笔`,
    `#导出时间：[${y}年${m}月${d}日 23:59:59]`,
  ].join('\r\n');
  const summary = ['#支付宝业务汇总查询', '门店编号,门店名称,交易订单总笔数,退款订单总笔数,订单金额（元）', `合计,,${lines.length},0,0.00`].join('\r\n');
  const gbk = (text: string) => new Uint8Array(iconv.encode(text, 'gbk'));
  return Buffer.from(zipSync({ [`${user}_${day}_业务明细(汇总).csv`]: gbk(summary), [`${user}_${day}_业务明细.csv`]: gbk(details) }));
}
