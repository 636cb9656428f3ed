import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  authorizationHeader,
  checkTimestamp,
  computeSignature,
  parseAuthorization,
  parseTimestamp,
  sha256Hex,
  signatureMatches,
} from '../../src/signing/signer.js';

interface Vector {
  name: string;
  game: string | null;
  partner?: string;
  method: string;
  uri: string;
  body: string;
  timestamp: string;
  secret: string;
  authorization: string;
}

const vectors: Vector[] = JSON.parse(readFileSync(new URL('../../../shared/spec/vectors/signing.json', import.meta.url), 'utf8')).cases;

function verify(v: Vector, over: Partial<Vector> = {}): boolean {
  const c = { ...v, ...over };
  const parsed = parseAuthorization(v.authorization);
  if (typeof parsed === 'string') return false;
  return signatureMatches([c.secret], parsed.signature, c.method, c.uri, c.timestamp, sha256Hex(Buffer.from(c.body, 'utf8')));
}

/** Flip one byte of a string (keeps it a string of the same length). */
function mutate(s: string, i: number): string {
  const ch = s.charCodeAt(i);
  return s.slice(0, i) + String.fromCharCode(ch === 0x41 ? 0x42 : 0x41) + s.slice(i + 1);
}

describe('SEAYOO-HMAC-SHA256 vectors (shared/spec/vectors/signing.json)', () => {
  it('has vectors', () => expect(vectors.length).toBeGreaterThanOrEqual(5));

  for (const v of vectors) {
    describe(v.name, () => {
      it('verifies at its own timestamp', () => {
        const parsed = parseAuthorization(v.authorization);
        expect(typeof parsed).toBe('object');
        if (typeof parsed === 'string') return;
        expect(parsed.principal).toEqual(v.partner ? { kind: 'partner', id: v.partner } : { kind: 'game', id: v.game });
        expect(parsed.timestamp).toBe(v.timestamp);
        expect(verify(v)).toBe(true);
        expect(checkTimestamp(v.timestamp, parseTimestamp(v.timestamp)!)).toBeNull();
      });

      it('is reproduced by our signer', () => {
        const principal = v.partner ? { kind: 'partner' as const, id: v.partner } : { kind: 'game' as const, id: v.game! };
        expect(authorizationHeader(principal, v.secret, v.method, v.uri, v.body, parseTimestamp(v.timestamp)!)).toBe(v.authorization);
      });

      it('fails when any byte of method, uri, timestamp, body or key changes', () => {
        for (let i = 0; i < v.method.length; i++) expect(verify(v, { method: mutate(v.method, i) })).toBe(false);
        for (let i = 0; i < v.uri.length; i++) expect(verify(v, { uri: mutate(v.uri, i) })).toBe(false);
        for (let i = 0; i < v.timestamp.length; i++) expect(verify(v, { timestamp: mutate(v.timestamp, i) })).toBe(false);
        for (let i = 0; i < v.secret.length; i++) expect(verify(v, { secret: mutate(v.secret, i) })).toBe(false);
        const body = Buffer.from(v.body, 'utf8');
        for (let i = 0; i < body.length; i++) {
          const b = Buffer.from(body);
          b[i] = (b[i] as number) ^ 0x01;
          const parsed = parseAuthorization(v.authorization);
          if (typeof parsed === 'string') throw new Error(parsed);
          expect(signatureMatches([v.secret], parsed.signature, v.method, v.uri, v.timestamp, sha256Hex(b))).toBe(false);
        }
        expect(verify(v, { body: v.body + ' ' })).toBe(false);
      });
    });
  }
});

describe('Authorization header parsing', () => {
  const sig = 'a'.repeat(64);
  it('accepts spaces, quotes, free order and unknown parameters', () => {
    const p = parseAuthorization(`SEAYOO-HMAC-SHA256  Signature="${sig}" , Foo=bar, Timestamp = 20261122T093000Z ,Game= "demo"`);
    expect(p).toEqual({ principal: { kind: 'game', id: 'demo' }, timestamp: '20261122T093000Z', signature: sig });
  });
  it.each([
    ['a tab between the scheme and the parameters', `SEAYOO-HMAC-SHA256\tGame=demo,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['a trailing comma (an empty list element, RFC 9110 5.6.1)', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${sig},`],
    ['empty list elements between and before the parameters', `SEAYOO-HMAC-SHA256 , ,Game=demo,,Timestamp=20261122T093000Z, ,Signature=${sig}`],
    ['a duplicated unknown parameter', `SEAYOO-HMAC-SHA256 Game=demo,Foo=1,Timestamp=20261122T093000Z,Foo=2,Signature=${sig}`],
    ['an unknown parameter without a value', `SEAYOO-HMAC-SHA256 Game=demo,flag,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['an unknown quoted value holding a comma', `SEAYOO-HMAC-SHA256 Game=demo,Note="a,b",Timestamp=20261122T093000Z,Signature=${sig}`],
    ['the scheme in lower case (schemes are case-insensitive)', `seayoo-hmac-sha256 Game=demo,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['parameter names in other cases (case-insensitive)', `SEAYOO-HMAC-SHA256 game=demo,TIMESTAMP=20261122T093000Z,signature=${sig}`],
  ])('accepts %s', (_name, header) => {
    expect(parseAuthorization(header)).toEqual({ principal: { kind: 'game', id: 'demo' }, timestamp: '20261122T093000Z', signature: sig });
  });
  it('accepts every hex digit at the edges of the ranges (0, 9, a, f)', () => {
    const edges = '09af'.repeat(16);
    const p = parseAuthorization(`SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${edges}`);
    expect(p).toEqual({ principal: { kind: 'game', id: 'demo' }, timestamp: '20261122T093000Z', signature: edges });
  });
  it('reads a partner, and keeps an = inside a value', () => {
    const p = parseAuthorization(`SEAYOO-HMAC-SHA256 Partner=p=1,Timestamp=20261122T093000Z,Signature=${sig}`);
    expect(p).toEqual({ principal: { kind: 'partner', id: 'p=1' }, timestamp: '20261122T093000Z', signature: sig });
  });
  it.each([
    ['missing', undefined],
    ['empty', ''],
    ['other scheme', `Bearer Game=demo,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['no parameters', 'SEAYOO-HMAC-SHA256'],
    ['no game', `SEAYOO-HMAC-SHA256 Timestamp=20261122T093000Z,Signature=${sig}`],
    ['game and partner', `SEAYOO-HMAC-SHA256 Game=a,Partner=b,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['empty game', `SEAYOO-HMAC-SHA256 Game=,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['no timestamp', `SEAYOO-HMAC-SHA256 Game=demo,Signature=${sig}`],
    ['short signature', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=abc`],
    ['upper-case signature', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${'A'.repeat(64)}`],
    ['65-character signature', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${sig}a`],
    // The characters just outside 0-9 and a-f: / : ` g
    ...['/', ':', '`', 'g'].map((c): [string, string] => [`signature with ${c}`, `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${'a'.repeat(63)}${c}`]),
    ['signature starting with g', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=g${'a'.repeat(63)}`],
    ['signature with a non-ASCII digit', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${'a'.repeat(32)}\u0661${'a'.repeat(31)}`],
    ['a known parameter without =', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp,Signature=${sig}`],
    ['a known parameter without = beside a good one', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature,Signature=${sig}`],
    ['a known parameter twice in different cases', `SEAYOO-HMAC-SHA256 Game=demo,game=x,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['a scheme that only starts like ours', `SEAYOO-HMAC-SHA256X Game=demo,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['the scheme after a leading space', ` SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['duplicated parameter', `SEAYOO-HMAC-SHA256 Game=demo,Game=x,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['duplicated Partner', `SEAYOO-HMAC-SHA256 Partner=p,Partner=p,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['duplicated Timestamp', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['duplicated Signature', `SEAYOO-HMAC-SHA256 Game=demo,Timestamp=20261122T093000Z,Signature=${sig},Signature=${sig}`],
    ['parameter without a name', `SEAYOO-HMAC-SHA256 Game=demo,=x,Timestamp=20261122T093000Z,Signature=${sig}`],
    ['empty parameter list', 'SEAYOO-HMAC-SHA256 '],
    ['= only in the next parameter', `SEAYOO-HMAC-SHA256 Game,demo=x,Timestamp=20261122T093000Z,Signature=${sig}`],
  ])('rejects %s', (_name, header) => {
    expect(typeof parseAuthorization(header)).toBe('string');
  });
});

describe('timestamps', () => {
  const t = parseTimestamp('20261122T093000Z')!;
  it('accepts 300 s either way and rejects 301 s', () => {
    expect(checkTimestamp('20261122T093000Z', t + 300_000)).toBeNull();
    expect(checkTimestamp('20261122T093000Z', t - 300_000)).toBeNull();
    expect(checkTimestamp('20261122T093000Z', t + 301_000)).not.toBeNull();
    expect(checkTimestamp('20261122T093000Z', t - 301_000)).not.toBeNull();
  });
  it.each(['2026-11-22T09:30:00Z', '20260230T000000Z', '20261131T000000Z', '20261122T240000Z', '20261322T093000Z', '20261122T096000Z', '20261122T093000', '20261122t093000z', ''])('rejects %s', (ts) => {
    expect(parseTimestamp(ts)).toBeNull();
  });
  it('accepts either of two rotation keys', () => {
    const s = computeSignature('sk_new', 'POST', '/x', '20261122T093000Z', '{}');
    expect(signatureMatches(['sk_old', 'sk_new'], s, 'POST', '/x', '20261122T093000Z', sha256Hex('{}'))).toBe(true);
    expect(signatureMatches(['sk_old'], s, 'POST', '/x', '20261122T093000Z', sha256Hex('{}'))).toBe(false);
  });
});
