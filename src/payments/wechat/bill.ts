import { gunzipSync } from 'node:zlib';
import type { StatementEntry } from '../provider.js';

/**
 * WeChat Pay's trade bill (交易账单, CSV): a header line, one line per transaction with every
 * field prefixed by a backtick, then summary lines from `总交易单数`. Amounts are yuan with two
 * decimals; they are read as text, never as floating point.
 */
export function parseTradeBill(file: Buffer): StatementEntry[] {
  const text = (file[0] === 0x1f && file[1] === 0x8b ? gunzipSync(file) : file).toString('utf8').replace(/^\uFEFF/, '');
  const lines = text.split(/\r?\n/).filter((l) => l.length > 0);
  const header = (lines[0] ?? '').split(',').map((h) => h.trim());
  const col = (name: string) => {
    const i = header.indexOf(name);
    if (i < 0) throw new Error(`the trade bill has no column ${name}`);
    return i;
  };
  const [txn, order, state, currency, amount] = [col('微信订单号'), col('商户订单号'), col('交易状态'), col('货币种类'), col('订单金额')];
  const out: StatementEntry[] = [];
  for (const line of lines.slice(1)) {
    if (line.startsWith('总交易单数')) break;
    const f = line.split(',').map((v) => v.replace(/^`/, '').trim());
    if (f[state] !== 'SUCCESS') continue;
    out.push({ provider_txn_id: f[txn] ?? '', order_id: f[order] ?? '', amount: fen(f[amount] ?? ''), currency: f[currency] || 'CNY' });
  }
  return out;
}

/** "6.00" -> 600. */
export function fen(yuan: string): number {
  const m = /^(\d{1,13})(?:\.(\d{1,2}))?$/.exec(yuan);
  if (!m) throw new Error(`the trade bill has an amount that is not yuan: ${yuan.slice(0, 32)}`);
  return Number(m[1]) * 100 + Number((m[2] ?? '0').padEnd(2, '0'));
}
