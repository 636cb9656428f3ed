import { visit, type JSONPath } from 'jsonc-parser';

/**
 * PROTOCOL 3: an integer is "a JSON number with no fraction". JSON.parse reads `2.0` as 2 and
 * `1.0000000000000001` as 1, so the schema's integer check, which sees only the parsed value,
 * lets both through (the second silently changed). This looks at the numbers as written, in
 * the fields where the body schema wants an integer.
 */

type Schema = Record<string, unknown>;

const DOT = 0x2e;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The dotted path of the first field that the schema wants as an integer but the body writes
 * with a fraction part (`2.0`, `1.5e1`), or null. Runs on every JSON body, so it first asks
 * the cheapest questions: a body with no `.` (a session report) or no digit-dot-digit anywhere
 * (what SDKs send, unless a string holds an IP address or a version) is answered at once
 * (0.1-0.2 µs); one whose strings hold one costs a walk over its characters (~1.3 µs).
 */
export function integerWrittenWithFraction(text: string, schema: Schema | undefined): string | null {
  if (!schema || !text.includes('.') || !DIGIT_DOT_DIGIT.test(text) || !fractionOutsideStrings(text)) return null;
  let found: string | null = null;
  visit(text, {
    onLiteralValue(value: unknown, offset: number, length: number, _line: number, _char: number, path: () => JSONPath) {
      if (found !== null || typeof value !== 'number' || !text.slice(offset, offset + length).includes('.')) return;
      const at = path();
      if (wantsInteger(schema, at)) found = at.join('.');
    },
  });
  return found;
}

const DIGIT_DOT_DIGIT = /\d\.\d/;

/**
 * A `.` outside strings with a digit on each side: the only way a JSON number has a fraction
 * part. Strings are skipped, so a URL or an IP address in one (`http://10.0.0.1/notify`) does
 * not send the body to the slower walk.
 */
function fractionOutsideStrings(text: string): boolean {
  let inString = false;
  const end = text.length - 1;
  for (let i = 1; i < end; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === DOT && isDigit(text.charCodeAt(i - 1)) && isDigit(text.charCodeAt(i + 1))) return true;
  }
  return false;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;

/** Whether the schema at `path` takes integers and no other numbers (through anyOf/oneOf/allOf). */
function wantsInteger(schema: Schema, path: JSONPath): boolean {
  let nodes = alternatives(schema);
  for (const key of path) nodes = nodes.flatMap((n) => alternatives(child(n, key)));
  return nodes.some((n) => hasType(n, 'integer')) && !nodes.some((n) => hasType(n, 'number'));
}

function alternatives(schema: unknown): Schema[] {
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Schema;
  const branches = [s.anyOf, s.oneOf, s.allOf].filter(Array.isArray).flat() as unknown[];
  return branches.length ? [s, ...branches.flatMap(alternatives)] : [s];
}

function child(schema: Schema, key: string | number): unknown {
  if (typeof key === 'number') return schema.items;
  const props = schema.properties as Record<string, unknown> | undefined;
  if (props && Object.hasOwn(props, key)) return props[key];
  return typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
}

function hasType(schema: Schema, type: string): boolean {
  return schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type));
}
