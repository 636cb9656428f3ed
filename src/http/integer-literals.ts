import { visit, type JSONPath } from 'jsonc-parser';

/**
 * PROTOCOL 3: an integer is "a JSON number with no fraction". JSON.parse reads `2.0` as 2 and
 * `1.0000000000000001` as 1, so the schema's integer check, which sees only the parsed value,
 * lets both through (the second silently changed). This looks at the numbers as written, in
 * the fields where the body schema wants an integer.
 */

type Schema = Record<string, unknown>;

const DOT = 0x2e;

/**
 * The dotted path of the first field that the schema wants as an integer but the body writes
 * with a fraction part (`2.0`, `1.5e1`), or null. A body without a `.` between two digits
 * (what SDKs send) is answered without parsing it again.
 */
export function integerWrittenWithFraction(raw: Buffer, schema: Schema | undefined): string | null {
  if (!schema || !mayHoldFraction(raw)) return null;
  let found: string | null = null;
  const text = raw.toString('utf8');
  visit(text, {
    onLiteralValue(value: unknown, offset: number, length: number, _line: number, _char: number, path: () => JSONPath) {
      if (found !== null || typeof value !== 'number' || !text.slice(offset, offset + length).includes('.')) return;
      const at = path();
      if (wantsInteger(schema, at)) found = at.join('.');
    },
  });
  return found;
}

/** A `.` with a digit on each side: the only way a JSON number has a fraction part. */
function mayHoldFraction(raw: Buffer): boolean {
  for (let i = raw.indexOf(DOT); i > 0; i = raw.indexOf(DOT, i + 1)) {
    if (isDigit(raw[i - 1]) && isDigit(raw[i + 1])) return true;
  }
  return false;
}

const isDigit = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x39;

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
