/**
 * PROTOCOL 3: an integer is "a JSON number with no fraction". JSON.parse reads `2.0` as 2 and
 * `1.0000000000000001` as 1, so the schema's integer check, which sees only the parsed value,
 * lets both through (the second silently changed). This looks at the numbers as written, in
 * the fields where the body schema wants an integer.
 *
 * The walk is our own, not a JSON library's visitor: it runs on bodies from anyone (the client
 * API is unauthenticated) before any other check of their content, so it must be linear in the
 * body's size whatever its shape. A recursive visitor overflows the stack on a 64 KiB body of
 * nested arrays, and one that builds each value's path costs depth x values (seconds for one
 * such body). This one keeps a frame only for containers the schema describes (a few levels)
 * and a counter for everything below them.
 */

type Schema = Record<string, unknown>;

interface Frame {
  /** The schema's alternatives for this container (object or array). */
  nodes: Schema[];
  isArray: boolean;
  /** Dotted path of the container ('' for the body). */
  path: string;
  /** The current member's key (objects) or index (arrays). */
  key: string;
  index: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;
const DOT = 0x2e;

/**
 * The dotted path of the first field that the schema wants as an integer but the body writes
 * with a fraction part (`2.0`, `1.5e1`), or null. `text` must be valid JSON (it is called after
 * JSON.parse). Runs on every JSON body, so it first asks the cheapest questions: a body with no
 * `.` (a session report) or no digit-dot-digit anywhere (what SDKs send, unless a string holds
 * an IP address or a version) is answered at once (0.1-0.2 µs); one whose digit-dot-digits are
 * all inside strings by a pass from string to string (~1 µs); the rest by the walk.
 */
export function integerWrittenWithFraction(text: string, schema: Schema | undefined): string | null {
  if (!schema || !text.includes('.') || !DIGIT_DOT_DIGIT.test(text) || !fractionOutsideStrings(text)) return null;
  return walk(text, schema);
}

/**
 * Whether a `.` with a digit on each side stands outside every string: the only way a JSON
 * number has a fraction part. Cheaper than the walk (no frames, no keys), it answers a body
 * whose strings hold an IP address or a version (~1 µs).
 */
function fractionOutsideStrings(text: string): boolean {
  for (let at = 0; ; ) {
    const quote = text.indexOf('"', at);
    const end = quote < 0 ? text.length : quote;
    for (let dot = text.indexOf('.', at); dot >= 0 && dot < end; dot = text.indexOf('.', dot + 1)) {
      if (isDigit(text.charCodeAt(dot - 1)) && isDigit(text.charCodeAt(dot + 1))) return true;
    }
    if (quote < 0) return false;
    at = stringEnd(text, quote) + 1;
  }
}

const DIGIT_DOT_DIGIT = /\d\.\d/;

function walk(text: string, schema: Schema): string | null {
  const frames: Frame[] = [];
  /** Containers entered below the described ones: only their brackets matter. */
  let ignored = 0;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (expectKey && ignored === 0) {
        const top = frames[frames.length - 1] as Frame;
        const raw = text.slice(i + 1, end);
        top.key = raw.includes('\\') ? (JSON.parse(text.slice(i, end + 1)) as string) : raw;
        expectKey = false;
      }
      i = end;
    } else if (c === LBRACE || c === LBRACKET) {
      const nodes = ignored === 0 ? valueNodes(frames, schema) : [];
      if (nodes.length === 0) ignored++;
      else frames.push({ nodes, isArray: c === LBRACKET, path: valuePath(frames), key: '', index: 0 });
      expectKey = c === LBRACE && ignored === 0;
    } else if (c === RBRACE || c === RBRACKET) {
      if (ignored > 0) ignored--;
      else frames.pop();
      expectKey = false;
    } else if (c === COMMA) {
      if (ignored === 0) {
        const top = frames[frames.length - 1] as Frame;
        if (top.isArray) top.index++;
        else expectKey = true;
      }
    } else if (c === MINUS || isDigit(c)) {
      let end = i + 1;
      let fraction = false;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) {
        if (text.charCodeAt(end) === DOT) fraction = true;
        end++;
      }
      if (fraction && ignored === 0 && wantsInteger(valueNodes(frames, schema))) return valuePath(frames);
      i = end - 1;
    }
  }
  return null;
}

/**
 * Index of the quote that ends the string starting at `start`: the next quote not escaped by
 * an odd run of backslashes. indexOf, not a loop over characters: strings are most of a body.
 */
function stringEnd(text: string, start: number): number {
  for (let q = text.indexOf('"', start + 1); q > 0; q = text.indexOf('"', q + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(q - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return q;
  }
  return text.length;
}

/** The schema's alternatives for the value at the current position (the body itself at the top). */
function valueNodes(frames: Frame[], schema: Schema): Schema[] {
  const top = frames[frames.length - 1];
  if (!top) return alternatives(schema);
  return top.nodes.flatMap((n) => alternatives(top.isArray ? n.items : child(n, top.key)));
}

function valuePath(frames: Frame[]): string {
  const top = frames[frames.length - 1];
  if (!top) return '';
  const member = top.isArray ? String(top.index) : top.key;
  return top.path ? `${top.path}.${member}` : member;
}

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
const isNumberChar = (c: number): boolean => isDigit(c) || c === DOT || c === 0x65 || c === 0x45 || c === 0x2b || c === MINUS;

/** Whether these alternatives take integers and no other numbers. */
function wantsInteger(nodes: Schema[]): boolean {
  return nodes.some((n) => hasType(n, 'integer')) && !nodes.some((n) => hasType(n, 'number'));
}

/** A schema and, through anyOf/oneOf/allOf, the schemas it combines. */
function alternatives(schema: unknown): Schema[] {
  if (!schema || typeof schema !== 'object') return [];
  const s = schema as Schema;
  const branches = [s.anyOf, s.oneOf, s.allOf].filter(Array.isArray).flat() as unknown[];
  return branches.length ? [s, ...branches.flatMap(alternatives)] : [s];
}

function child(schema: Schema, key: string): unknown {
  const props = schema.properties as Record<string, unknown> | undefined;
  if (props && Object.hasOwn(props, key)) return props[key];
  return typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
}

function hasType(schema: Schema, type: string): boolean {
  return schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type));
}
