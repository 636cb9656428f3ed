/**
 * The operator's name in the `X-Operator` header (informational, for the audit log). A header
 * value carries printable ASCII reliably and nothing else, so a name with other characters
 * (李雷, José) travels as an RFC 8187 extended value: `UTF-8''` and the name's UTF-8 bytes
 * percent-encoded (`UTF-8''%E6%9D%8E%E9%9B%B7`). Shared by the service, the CLI and the console.
 */

const MAX_CODE_POINTS = 64;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;
// UTF-8, an optional language tag (ignored), the value: RFC 8187's ext-value. Other charsets
// are not recognised (the value is then taken as a plain ASCII name).
const EXTENDED_PREFIX = /^utf-8'[a-z0-9-]*'/i;
const EXTENDED = new RegExp(`${EXTENDED_PREFIX.source}((?:%[0-9a-f]{2}|[a-z0-9!#$&+\\-.^_\`|~])+)$`, 'i');
// No control, format (bidi overrides, invisible marks) or line/paragraph separator characters:
// the name is shown in tables and logs as one line, as written. The zero-width joiner and
// non-joiner are format characters that names in Indic scripts and Persian need.
const UNSHOWABLE = /[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]|(?![\u200c\u200d])\p{Cf}/u;
// At least one character that is neither a space nor a joiner.
const VISIBLE = /[^\s\u200c\u200d]/u;

/**
 * A name the audit log can hold: 1-64 code points, none of them unshowable, no space at either
 * end (HTTP drops it from a header value).
 */
export function isOperatorName(name: string): boolean {
  const length = [...name].length;
  return length >= 1 && length <= MAX_CODE_POINTS && !UNSHOWABLE.test(name) && name.trim() === name && VISIBLE.test(name);
}

/** The header value for `name`, or null when the audit log cannot hold it. */
export function encodeOperatorName(name: string): string | null {
  if (!isOperatorName(name)) return null;
  // Sent as is when plain ASCII, unless it would read as an extended value itself.
  if (PRINTABLE_ASCII.test(name) && !EXTENDED_PREFIX.test(name)) return name;
  return `UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}

/** The name a header value carries, or null (then the audit log says `admin`). */
export function decodeOperatorName(value: string): string | null {
  const extended = EXTENDED.exec(value);
  let name = value;
  if (extended) {
    try {
      name = decodeURIComponent(extended[1] as string);
    } catch {
      return null; // not UTF-8
    }
  } else if (!PRINTABLE_ASCII.test(value)) return null;
  return isOperatorName(name) ? name : null;
}
