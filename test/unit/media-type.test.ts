import { describe, expect, it } from 'vitest';
import { prefersHtml } from '../../src/lib/media-type.js';

describe('prefersHtml (Accept, RFC 9110 12.5.1)', () => {
  it.each([
    ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', true],
    ['TEXT/HTML', true],
    ['text/html;q=0.5, */*;q=0.5', true],
    ['application/json;q=0.5, text/html', true],
    [undefined, false],
    ['', false],
    ['*/*', false],
    ['text/*', false],
    ['application/json', false],
    ['application/json, text/html;q=0', false],
    ['application/json;q=1, text/html;q=0.1', false],
    ['text/html;q=0.5, application/*;q=0.9', false],
    ['text/html;q=abc', false],
  ])('%s -> %s', (accept, html) => {
    expect(prefersHtml(accept)).toBe(html);
  });
});
