import Ajv, { _, str, type ErrorObject, type KeywordCxt, type ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));
const FORMAT_NAMES: Record<string, string> = {
  'http-url': 'an absolute http(s) URL (whose path does not start with //, every % followed by two hex digits)',
  iso4217: 'an ISO 4217 currency code in use (CNY, USD, ...)',
};

/**
 * Whether `v` is an http-url (FORMAT_NAMES). A game sends the same notify_url with every
 * create-order, and parsing it as a URL is a sizeable part of validating the body, so recent
 * verdicts are kept (a pure function of the string; at most HTTP_URL_VERDICTS, then started over).
 * Only for strings of at most HTTP_URL_KEPT_LENGTH characters, the longest any http-url field
 * takes: the format runs before the field's maxLength (useCodePointLengths adds that keyword
 * after it), so a body's longer strings reach it too, and must not fill memory.
 */
export const HTTP_URL_VERDICTS = 1024;
export const HTTP_URL_KEPT_LENGTH = 1024;
const httpUrlVerdicts = new Map<string, boolean>();
export function isHttpUrlCached(v: string): boolean {
  if (v.length > HTTP_URL_KEPT_LENGTH) return isHttpUrl(v);
  let verdict = httpUrlVerdicts.get(v);
  if (verdict === undefined) {
    verdict = isHttpUrl(v);
    if (httpUrlVerdicts.size >= HTTP_URL_VERDICTS) httpUrlVerdicts.clear();
    httpUrlVerdicts.set(v, verdict);
  }
  return verdict;
}

/** How many http-url verdicts are kept now (for tests). */
export const keptHttpUrlVerdicts = (): number => httpUrlVerdicts.size;

function isHttpUrl(v: string): boolean {
  // A % that starts no escape (%zz): WHATWG parsing keeps it, but Go's HTTP server
  // refuses such a request target (400), so a Go SDK receiver could never take a delivery.
  if (!/^https?:\/\//i.test(v) || /%(?![0-9A-Fa-f]{2})/.test(v)) return false;
  try {
    const u = new URL(v);
    // A path starting with // reads as a host to a receiver that resolves the request
    // target as a relative URL (the Node.js SDK does), so it could never verify a signature.
    // Port 0 can never be connected to: nothing would ever be delivered there.
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0 && !u.pathname.startsWith('//') && u.port !== '0';
  } catch {
    return false;
  }
}

/**
 * Ajv set-up: bodies are validated strictly (no type coercion: "5" is not 5), query strings and
 * path params are coerced (they are always strings on the wire). Lengths count code points.
 */
function makeAjv(coerce: boolean) {
  const ajv = new Ajv.default({
    coerceTypes: coerce,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
  });
  ajv.addFormat('http-url', { type: 'string', validate: isHttpUrlCached });
  ajv.addFormat('date', /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/);
  // The currencies in use that this Node.js (its ICU data) knows: ZZZ is no currency.
  ajv.addFormat('iso4217', { type: 'string', validate: (v: string) => CURRENCIES.has(v) });
  useCodePointLengths(ajv);
  return ajv;
}

/** Code points in `s`: a surrogate pair counts once (Ajv's ucs2length, as a plain loop). */
function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n--;
      i++;
    }
  }
  return n;
}

/**
 * minLength and maxLength in code points, as Ajv's own keywords count them, with the same
 * errors, but counted only when the UTF-16 length leaves the answer open: a string has at most
 * as many code points as UTF-16 units and at least half as many. Ajv counts every string twice,
 * on every request; within the bounds, this counts none.
 */
function useCodePointLengths(ajv: Ajv.default): void {
  for (const keyword of ['maxLength', 'minLength'] as const) {
    ajv.removeKeyword(keyword);
    ajv.addKeyword({
      keyword,
      type: 'string',
      schemaType: 'number',
      error: {
        message: ({ schemaCode }) => str`must NOT have ${keyword === 'maxLength' ? 'more' : 'fewer'} than ${schemaCode} characters`,
        params: ({ schemaCode }) => _`{limit: ${schemaCode}}`,
      },
      code(cxt: KeywordCxt) {
        const { data, schemaCode } = cxt;
        const count = cxt.gen.scopeValue('func', { ref: codePointLength });
        if (keyword === 'maxLength') cxt.fail(_`${data}.length > ${schemaCode} && ${count}(${data}) > ${schemaCode}`);
        else cxt.fail(_`${data}.length < ${schemaCode} || (${data}.length < 2 * ${schemaCode} && ${count}(${data}) < ${schemaCode})`);
      },
    });
  }
}

const bodyAjv = makeAjv(false);
const queryAjv = makeAjv(true);
const cache = new WeakMap<object, ValidateFunction>();

export const schemaCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  const ajv = httpPart === 'body' ? bodyAjv : queryAjv;
  const key = schema as object;
  let fn = cache.get(key);
  if (!fn) {
    fn = ajv.compile(schema as object);
    if (httpPart !== 'body') fn = strictStrings(fn, schema as QuerySchema);
    cache.set(key, fn);
  }
  return fn as never;
};

type QuerySchema = { properties?: Record<string, { type?: string; minimum?: number; maximum?: number }> };
const DECIMAL_INTEGER = /^-?[0-9]{1,16}$/;
const DECIMAL_DIGITS = /^-?[0-9]+$/;

/**
 * Query and path values are strings that Ajv coerces, and its coercion takes what Number()
 * takes: `0x10`, `1e1` and ` 1` would pass as integers. An integer must be written in decimal
 * digits, and a parameter given twice (`?limit=1&limit=2`) is named as such.
 */
function strictStrings(validate: ValidateFunction, schema: QuerySchema): ValidateFunction {
  const props = Object.entries(schema.properties ?? {}).filter(([, p]) => p.type !== 'array');
  if (props.length === 0) return validate;
  const fail = (wrapped: ValidateFunction, name: string, keyword: string, params: Record<string, unknown>) => {
    wrapped.errors = [{ keyword, instancePath: `/${name}`, schemaPath: '', params, message: keyword === 'repeated' ? 'must be given once' : 'must be integer' }];
    return false;
  };
  const wrapped = ((data: Record<string, unknown> | undefined) => {
    for (const [name, p] of props) {
      const v = data?.[name];
      if (Array.isArray(v)) return fail(wrapped, name, 'repeated', {});
      if (p.type === 'integer' && typeof v === 'string' && !DECIMAL_INTEGER.test(v)) {
        // Decimal digits past 16 are an integer out of range, said as the bound it is beyond.
        const negative = v.startsWith('-');
        const limit = negative ? p.minimum : p.maximum;
        if (DECIMAL_DIGITS.test(v) && limit !== undefined && !/^-?0+[0-9]{0,16}$/.test(v)) {
          return fail(wrapped, name, negative ? 'minimum' : 'maximum', { limit });
        }
        return fail(wrapped, name, 'type', { type: 'integer' });
      }
    }
    const ok = validate(data);
    wrapped.errors = validate.errors;
    return ok;
  }) as ValidateFunction;
  return wrapped;
}

/** One readable sentence naming the offending field, from Ajv's first error. */
export function describeValidationError(errors: ErrorObject[], part: string): string {
  const e = errors[0];
  if (!e) return 'request is invalid';
  const base = e.instancePath.replace(/^\//, '').replace(/\//g, '.');
  const where = part === 'body' ? '' : `${part} parameter `;
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${where}${join(base, String(p.missingProperty))} is required`;
    case 'type':
      return base ? `${where}${base} must be ${article(String(p.type))}` : `request ${part} must be a JSON ${String(p.type)}`;
    case 'minLength':
      return `${where}${base} must be at least ${String(p.limit)} characters long`;
    case 'maxLength':
      return `${where}${base} must be at most ${String(p.limit)} characters long`;
    case 'minimum':
      return `${where}${base} must be >= ${String(p.limit)}`;
    case 'maximum':
      return `${where}${base} must be <= ${String(p.limit)}`;
    case 'enum':
      return `${where}${base} must be one of ${(p.allowedValues as unknown[]).join(', ')}`;
    case 'format':
      return `${where}${base} must be ${FORMAT_NAMES[String(p.format)] ?? `a valid ${String(p.format)}`}`;
    case 'pattern':
      return `${where}${base} has an invalid format`;
    case 'additionalProperties':
      // A misspelt filter (?game_i=) must not pass as no filter at all.
      return `${where}${join(base, String(p.additionalProperty))} is not a known ${part === 'body' ? 'field' : 'parameter'}`;
    case 'repeated':
      return `${where}${base} must be given once`;
    case 'minItems':
    case 'maxItems':
    case 'uniqueItems':
      return `${where}${base} ${e.message ?? 'is invalid'}`;
    default:
      return `${where}${base || part} ${e.message ?? 'is invalid'}`;
  }
}

const join = (a: string, b: string) => (a ? `${a}.${b}` : b);
const article = (t: string) => (t === 'integer' || t === 'object' || t === 'array' ? `an ${t}` : `a ${t}`);
