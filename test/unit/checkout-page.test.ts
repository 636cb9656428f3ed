import { describe, expect, it } from 'vitest';
import { escapeHtml, formatMinorUnits } from '../../src/checkout/page.js';

describe('checkout page formatting', () => {
  it.each([
    [600, 'CNY', 'CNY 6.00'],
    [1, 'USD', 'USD 0.01'],
    [123456789, 'CNY', 'CNY 1,234,567.89'],
    [1234, 'JPY', 'JPY 1,234'],
    [1234, 'KWD', 'KWD 1.234'],
    [500, 'XYZ', 'XYZ 5.00'],
    [123456, 'HUF', 'HUF 1,234.56'],
    [1000, 'IQD', 'IQD 1.000'],
    [12345, 'IDR', 'IDR 123.45'],
    [990, 'CLP', 'CLP 990'],
  ])('formats %d minor units of %s as %s', (amount, currency, text) => {
    expect(formatMinorUnits(amount, currency)).toBe(text);
  });

  it('escapes the five HTML metacharacters', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });
});
