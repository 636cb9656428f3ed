import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { zipSync } from 'fflate';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvFields, downloadBill, MAX_BILL_BYTES, parseAlipayBill } from '../../src/payments/alipay/bill.js';
import { billZip } from '../helpers/alipay.js';

/** Alipay's trade bill file (src/payments/alipay/bill.ts): reading it, and where it may be downloaded from. */
describe('parseAlipayBill', () => {
  it('reads the trades of the details file (GBK), not its refunds nor the summary', () => {
    const zip = billZip('2026-11-20', [
      { trade_no: 'T1', out_trade_no: 'ord_1', total_amount: '6.00' },
      { trade_no: 'T2', out_trade_no: 'ord_2', total_amount: '0.5' },
      { trade_no: 'T1', out_trade_no: 'ord_1', total_amount: '6.00', kind: '退款' },
    ]);
    expect(parseAlipayBill(zip)).toEqual([
      { provider_txn_id: 'T1', order_id: 'ord_1', amount: 600, currency: 'CNY' },
      { provider_txn_id: 'T2', order_id: 'ord_2', amount: 50, currency: 'CNY' },
    ]);
    expect(parseAlipayBill(billZip('2026-11-20', []))).toEqual([]);
  });

  it('refuses a file that is not a zip, a zip without details, an amount that is not yuan', () => {
    expect(() => parseAlipayBill(Buffer.from('not a zip'))).toThrow(/not a zip/);
    const gbk = (s: string) => new Uint8Array(iconv.encode(s, 'gbk'));
    expect(() => parseAlipayBill(Buffer.from(zipSync({ 'a.csv': gbk('#汇总\n门店编号,门店名称\n') })))).toThrow(/no business details/);
    const header = '支付宝交易号,商户订单号,业务类型,订单金额（元）';
    expect(() => parseAlipayBill(Buffer.from(zipSync({ 'a.csv': gbk(`${header}\nT1\t,o1\t,交易\t,6.001\t\n`) })))).toThrow(/not yuan/);
    expect(() => parseAlipayBill(Buffer.from(zipSync({ 'a.csv': gbk('支付宝交易号,商户订单号,业务类型\n') })))).toThrow(/no column 订单金额/);
  });

  it('splits CSV fields with quotes and padding', () => {
    expect(csvFields('a\t, "b,c" ,"d""e",')).toEqual(['a', 'b,c', 'd"e', '']);
  });
});

describe('downloadBill', () => {
  let server: http.Server;
  let base = '';
  let big = false;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (big) {
        res.write(Buffer.alloc(MAX_BILL_BYTES));
        return void res.end(Buffer.alloc(1));
      }
      res.writeHead(req.url === '/bill' ? 200 : 302, { location: '/bill' }).end('zip');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('fetches from the gateway host; refuses other hosts, other schemes, redirects, files too large', async () => {
    expect((await downloadBill(`${base}/gateway.do`, `${base}/bill`)).toString()).toBe('zip');
    await expect(downloadBill('https://openapi.alipay.com/gateway.do', `${base}/bill`)).rejects.toThrow(/not on openapi.alipay.com or its domain/);
    await expect(downloadBill(`${base}/gateway.do`, 'http://localhost/bill')).rejects.toThrow(/not on 127.0.0.1/);
    await expect(downloadBill(`${base}/gateway.do`, 'file:///etc/passwd')).rejects.toThrow(/not on/);
    await expect(downloadBill(`${base}/gateway.do`, 'not a url')).rejects.toThrow(/not a URL/);
    await expect(downloadBill(`${base}/gateway.do`, `${base}/elsewhere`)).rejects.toThrow(/answered 302/);
    big = true;
    await expect(downloadBill(`${base}/gateway.do`, `${base}/bill`)).rejects.toThrow(/larger than/);
  });
});
