import { describe, expect, it } from 'vitest';
import { HTTP_URL_KEPT_LENGTH, HTTP_URL_VERDICTS, isHttpUrlCached, keptHttpUrlVerdicts } from '../../src/http/validation.js';

// The http-url format keeps its recent verdicts (a game sends one notify_url with every order):
// a verdict must be the same whether it is worked out or remembered, also once the kept
// verdicts have been started over. test/server-api-validation.test.ts covers the format itself.
const CASES: [string, boolean][] = [
  ['https://game.example.com/notify', true],
  ['HTTP://GAME.EXAMPLE.COM/NOTIFY', true],
  ['https://game.example.com:8443/notify?x=1', true],
  ['ftp://game.example.com/notify', false],
  ['/relative/notify/path', false],
  ['javascript:alert(1)//x', false],
  ['https://game.example.com//notify', false],
  ['http://game.example.com:0/notify', false],
  ['https://game.example.com/a%zz', false],
  ['http://', false],
];

describe('http-url verdicts kept', () => {
  it.each(CASES)('%s -> %s, first and repeated', (url, ok) => {
    expect(isHttpUrlCached(url)).toBe(ok);
    expect(isHttpUrlCached(url)).toBe(ok);
    // A string of the same characters made anew (as each request's JSON.parse makes it).
    expect(isHttpUrlCached(url.split('').join(''))).toBe(ok);
  });

  it('keeps its verdicts right past its bound, where it starts over', () => {
    for (const [url, ok] of CASES) expect(isHttpUrlCached(url)).toBe(ok);
    for (let i = 0; i < HTTP_URL_VERDICTS * 2 + 7; i++) {
      expect(isHttpUrlCached(`https://game${i}.example.com/notify`)).toBe(true);
      expect(isHttpUrlCached(`https://game${i}.example.com/a%z${i}`)).toBe(false);
    }
    for (const [url, ok] of CASES) expect(isHttpUrlCached(url)).toBe(ok);
  });

  it('keeps no verdict of a string longer than any http-url field takes, and judges it all the same', () => {
    // Fill the kept verdicts to just under the bound, so that a kept one would show as growth.
    for (let i = 0; keptHttpUrlVerdicts() !== HTTP_URL_VERDICTS - 1; i++) isHttpUrlCached(`https://fill${i}.example.com/`);
    const before = keptHttpUrlVerdicts();
    const long = `https://game.example.com/${'x'.repeat(HTTP_URL_KEPT_LENGTH)}`;
    expect(isHttpUrlCached(long)).toBe(true);
    expect(isHttpUrlCached(`${long}%zz`)).toBe(false);
    expect(keptHttpUrlVerdicts()).toBe(before);
    const atBound = `https://game.example.com/${'y'.repeat(HTTP_URL_KEPT_LENGTH - 25)}`;
    expect(atBound.length).toBe(HTTP_URL_KEPT_LENGTH);
    expect(isHttpUrlCached(atBound)).toBe(true);
    expect(keptHttpUrlVerdicts()).toBe(before + 1);
  });
});
