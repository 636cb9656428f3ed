import { unzipSync } from 'fflate';
import iconv from 'iconv-lite';
import { request } from 'undici';
import type { StatementEntry } from '../provider.js';
import { fen } from './client.js';

/** The largest bill file downloaded, and the most its CSV files may hold unpacked. */
export const MAX_BILL_BYTES = 32 * 1024 * 1024;
const MAX_UNPACKED_BYTES = 256 * 1024 * 1024;
const TIMEOUT_MS = 30_000;
const CURRENCY = 'CNY';

/**
 * Alipay's trade bill of a day (`bill_type` trade): a zip of GBK-encoded CSV files, the
 * business details (业务明细) and their summary (业务明细(汇总)). The details file has comment
 * lines starting with `#`, a header line starting with 支付宝交易号, one line per trade or
 * refund (业务类型 交易 or 退款), fields padded with tabs. The statement is its 交易 lines:
 * trade_no (支付宝交易号), out_trade_no (商户订单号), 订单金额(元) in yuan, read as text.
 * Files are found by their header, not by name (names are GBK too, without the zip's UTF-8 flag).
 */
export function parseAlipayBill(zip: Buffer): StatementEntry[] {
  let unpacked = 0;
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(zip, {
      filter: (f) => {
        unpacked += f.originalSize;
        if (unpacked > MAX_UNPACKED_BYTES) throw new Error(`the bill unpacks to more than ${MAX_UNPACKED_BYTES} bytes`);
        return true;
      },
    });
  } catch (e) {
    throw new Error(`Alipay's bill file is not a zip it can read: ${(e as Error).message}`);
  }
  for (const data of Object.values(files)) {
    const lines = iconv.decode(Buffer.from(data), 'gb18030').split(/\r?\n/);
    const at = lines.findIndex((l) => l.replace(/^\uFEFF/, '').startsWith('支付宝交易号'));
    if (at >= 0) return detailLines(lines, at);
  }
  throw new Error("Alipay's bill file has no business details (a CSV whose header starts with 支付宝交易号)");
}

function detailLines(lines: string[], headerAt: number): StatementEntry[] {
  const header = csvFields(lines[headerAt]!.replace(/^\uFEFF/, ''));
  const col = (prefix: string) => {
    const i = header.findIndex((h) => h.startsWith(prefix));
    if (i < 0) throw new Error(`Alipay's bill has no column ${prefix}`);
    return i;
  };
  const [txn, order, kind, amount] = [col('支付宝交易号'), col('商户订单号'), col('业务类型'), col('订单金额')];
  const out: StatementEntry[] = [];
  for (const line of lines.slice(headerAt + 1)) {
    if (line.startsWith('#')) break;
    if (line.trim() === '') continue;
    const f = csvFields(line);
    if (f[kind] !== '交易') continue;
    const paid = fen(f[amount]);
    if (paid === null) throw new Error(`Alipay's bill has an amount that is not yuan: ${(f[amount] ?? '').slice(0, 32)}`);
    out.push({ provider_txn_id: f[txn] ?? '', order_id: f[order] ?? '', amount: paid, currency: CURRENCY });
  }
  return out;
}

/** One CSV line's fields, unquoted ("" inside quotes is a quote), without the padding tabs and spaces. */
export function csvFields(line: string): string[] {
  const out: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') (field += '"'), i++;
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') out.push(field.trim()), (field = '');
    else field += c;
  }
  out.push(field.trim());
  return out;
}

/**
 * Downloads the bill file at the `bill_download_url` of a verified answer. The address must be
 * on the gateway's host or its domain (openapi.alipay.com: *.alipay.com, where Alipay serves
 * bills), so a gateway answer can never send the service elsewhere; the file is at most
 * MAX_BILL_BYTES. The address is valid for 30 seconds: it is fetched at once.
 */
export async function downloadBill(gatewayUrl: string, billUrl: string): Promise<Buffer> {
  const gateway = new URL(gatewayUrl);
  let u: URL;
  try {
    u = new URL(billUrl);
  } catch {
    throw new Error("Alipay's bill_download_url is not a URL");
  }
  if ((u.protocol !== 'https:' && u.protocol !== 'http:') || !sameSite(u.hostname, gateway.hostname)) throw new Error(`Alipay's bill_download_url is not on ${gateway.hostname} or its domain`);
  // A redirect is not followed (undici's request does not): it is answered as a failure.
  const res = await request(u, { method: 'GET', headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS });
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new Error(`Alipay answered ${res.statusCode} to the bill download`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BILL_BYTES) {
      res.body.destroy();
      throw new Error(`Alipay's bill file is larger than ${MAX_BILL_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The same host, or a host under the gateway's domain (its last two labels; an IP address only itself). */
function sameSite(host: string, gatewayHost: string): boolean {
  if (host === gatewayHost) return true;
  if (/^[\d.]+$/.test(gatewayHost) || gatewayHost.includes(':')) return false;
  const domain = gatewayHost.split('.').slice(-2).join('.');
  return host.endsWith(`.${domain}`);
}
