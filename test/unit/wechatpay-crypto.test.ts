import { createVerify, generateKeyPairSync } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { fen, parseTradeBill } from '../../src/payments/wechat/bill.js';
import { answerMessage, appSignMessage, authorization, decryptResource, requestMessage, rsaSign, verificationFailure } from '../../src/payments/wechat/crypto.js';

/** WeChat Pay API v3 cryptography (src/payments/wechat/crypto.ts) against its documentation's examples, and its trade bill. */
const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

describe('the request signature (WECHATPAY2-SHA256-RSA2048)', () => {
  it("builds the message of the documentation's example (GET /v3/certificates, no body)", () => {
    expect(requestMessage('GET', '/v3/certificates', '1554208460', '593BEC0C930BF1AFEB40B4A08C8FB242', '')).toBe('GET\n/v3/certificates\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n\n');
  });

  it('signs path with query and the body exactly as sent; the header has the documented fields', () => {
    const body = '{"mchid":"1900009191"}';
    const h = authorization({ mchid: '1900009191', serialNo: '1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C', key: privateKey }, 'POST', '/v3/pay/transactions/out-trade-no/1217752501201407033233368018/close', body, '1554208460', '593BEC0C930BF1AFEB40B4A08C8FB242');
    const m = /^WECHATPAY2-SHA256-RSA2048 mchid="1900009191",nonce_str="593BEC0C930BF1AFEB40B4A08C8FB242",signature="([A-Za-z0-9+/=]+)",timestamp="1554208460",serial_no="1DDE55AD98ED71D6EDD4A4A16996DE7B47773A8C"$/.exec(h);
    expect(m).not.toBeNull();
    const message = 'POST\n/v3/pay/transactions/out-trade-no/1217752501201407033233368018/close\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{"mchid":"1900009191"}\n';
    expect(createVerify('RSA-SHA256').update(message).verify(publicKey, m![1]!, 'base64')).toBe(true);
    expect(Buffer.from(m![1]!, 'base64')).toHaveLength(256);
  });

  it("builds the App payment's sign message of the documentation's example", () => {
    expect(appSignMessage('wx8888888888888888', '1414561699', '5K8264ILTKCH16CQ2502SI8ZNMTM67VS', 'WX1217752501201407033233368018')).toBe('wx8888888888888888\n1414561699\n5K8264ILTKCH16CQ2502SI8ZNMTM67VS\nWX1217752501201407033233368018\n');
  });
});

describe("verifying WeChat Pay's signed answers and callbacks", () => {
  const body = '{"code_url":"weixin://wxpay/bizpayurl?pr=p4lpSuKzz"}';
  const now = 1_700_000_000;
  const headers = (o: { timestamp?: string; serial?: string; body?: string } = {}) => {
    const timestamp = o.timestamp ?? String(now);
    return { timestamp, nonce: 'c5ac7061fccab6bf3e254dcf98995b8c', serial: o.serial ?? 'PUB_KEY_ID_1', signature: rsaSign(privateKey, answerMessage(timestamp, 'c5ac7061fccab6bf3e254dcf98995b8c', o.body ?? body)) };
  };

  it('accepts the exact body signed with the configured key, serial and a timestamp within 5 minutes (both edges)', () => {
    expect(verificationFailure(headers(), body, 'PUB_KEY_ID_1', publicKey, now)).toBeNull();
    expect(verificationFailure(headers({ timestamp: String(now - 300) }), body, 'PUB_KEY_ID_1', publicKey, now)).toBeNull();
    expect(verificationFailure(headers({ timestamp: String(now + 300) }), body, 'PUB_KEY_ID_1', publicKey, now)).toBeNull();
  });

  it('refuses another body, serial, key, a timestamp past the window or not a number, missing headers', () => {
    expect(verificationFailure(headers(), `${body} `, 'PUB_KEY_ID_1', publicKey, now)).toMatch(/Signature/);
    expect(verificationFailure(headers({ serial: 'PUB_KEY_ID_2' }), body, 'PUB_KEY_ID_1', publicKey, now)).toMatch(/Serial/);
    expect(verificationFailure(headers(), body, 'PUB_KEY_ID_1', generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey, now)).toMatch(/Signature/);
    expect(verificationFailure(headers({ timestamp: String(now - 301) }), body, 'PUB_KEY_ID_1', publicKey, now)).toMatch(/Timestamp/);
    expect(verificationFailure(headers({ timestamp: String(now + 301) }), body, 'PUB_KEY_ID_1', publicKey, now)).toMatch(/Timestamp/);
    expect(verificationFailure(headers({ timestamp: '17e8' }), body, 'PUB_KEY_ID_1', publicKey, now)).toMatch(/Timestamp/);
    expect(verificationFailure({ ...headers(), signature: undefined }, body, 'PUB_KEY_ID_1', publicKey, now)).toMatch(/missing/);
    expect(verificationFailure({ ...headers(), signature: '!!!' }, body, 'PUB_KEY_ID_1', publicKey, now)).toMatch(/Signature/);
  });
});

describe('AEAD_AES_256_GCM callback resources', () => {
  // Made with node:crypto: key below, nonce "abcdefghijkl", associated data "transaction", the
  // 16-byte tag appended to the ciphertext before base64.
  const key = '0123456789abcdef0123456789abcdef';
  const vector = {
    algorithm: 'AEAD_AES_256_GCM',
    nonce: 'abcdefghijkl',
    associated_data: 'transaction',
    ciphertext: 'Eu6myr+6GaECeJdOZPZ6BX4CgyqKsVtpJ4oJqeVv9t5d8ZTeAnaG0Sse9f995+ap+3eGlugLNbibrBxvgI/pKKOG57nYyh1vcTZ3CUVK3gvKxcdWy+pVe7Q/E6sDhVh2/9bRx4QKzJfLaoZ8na88y2ynMkvr',
  };

  it('opens the vector', () => {
    expect(JSON.parse(decryptResource(vector, key))).toEqual({ out_trade_no: '385314294757384194', trade_state: 'SUCCESS', amount: { total: 600, currency: 'CNY' } });
  });

  it('refuses another key, nonce, associated data, a changed tag or ciphertext, a short ciphertext, another algorithm', () => {
    const flip = (b64: string, at: number) => {
      const b = Buffer.from(b64, 'base64');
      b[at] = b[at]! ^ 1;
      return b.toString('base64');
    };
    expect(() => decryptResource(vector, 'fedcba9876543210fedcba9876543210')).toThrow();
    expect(() => decryptResource({ ...vector, nonce: 'abcdefghijkm' }, key)).toThrow();
    expect(() => decryptResource({ ...vector, associated_data: 'refund' }, key)).toThrow();
    expect(() => decryptResource({ ...vector, ciphertext: flip(vector.ciphertext, Buffer.from(vector.ciphertext, 'base64').length - 1) }, key)).toThrow();
    expect(() => decryptResource({ ...vector, ciphertext: flip(vector.ciphertext, 0) }, key)).toThrow();
    expect(() => decryptResource({ ...vector, ciphertext: Buffer.alloc(15).toString('base64') }, key)).toThrow(/shorter/);
    expect(() => decryptResource({ ...vector, algorithm: 'AES_256_CBC' }, key)).toThrow(/AEAD_AES_256_GCM/);
    expect(() => decryptResource(vector, key.slice(1))).toThrow(/32 bytes/);
  });
});

describe('the trade bill (CSV)', () => {
  const header = '交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,申请退款金额,费率备注';
  const line = (txn: string, order: string, state: string, amount: string) =>
    ['2026-01-01 10:00:00', 'wx8888888888888888', '1900009191', '0', '', txn, order, 'oUpF8u', 'NATIVE', state, 'OTHERS', 'CNY', amount, '0.00', '0', '0', '0.00', '0.00', '', '', 'gems', '', '0.00000', '0.60%', amount, '0.00', ''].map((v) => `\`${v}`).join(',');

  it('reads the successful payments (fen from yuan text), stops at the summary; gzip too', () => {
    const text = [header, line('4200001', '1001', 'SUCCESS', '6.00'), line('4200002', '1002', 'SUCCESS', '0.5'), line('4200003', '1003', 'REFUND', '1.00'), '总交易单数,应结订单总金额', '`3,`7.50'].join('\r\n');
    const want = [
      { provider_txn_id: '4200001', order_id: '1001', amount: 600, currency: 'CNY' },
      { provider_txn_id: '4200002', order_id: '1002', amount: 50, currency: 'CNY' },
    ];
    expect(parseTradeBill(Buffer.from(text))).toEqual(want);
    expect(parseTradeBill(gzipSync(Buffer.from(`\uFEFF${text}`)))).toEqual(want);
  });

  it('refuses amounts that are not yuan with at most two decimals, and a bill without its columns', () => {
    expect(fen('0.01')).toBe(1);
    expect(fen('9999999999999.99')).toBe(999_999_999_999_999);
    for (const bad of ['6.001', '-1.00', '1e3', '', '6.', '.5']) expect(() => fen(bad), bad).toThrow();
    expect(() => parseTradeBill(Buffer.from('a,b,c\r\n`1,`2,`3'))).toThrow(/column/);
  });
});
