import pino, { type Logger } from 'pino';

/** Keys whose values never reach a log line, at any depth, in any case. */
const SECRET_KEYS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'secret',
  'secret_key',
  'secrets_key',
  'order_token',
  'token',
  'admintoken',
  'password',
]);

const CENSOR = '[redacted]';
/** Deep enough for an error's cause's response headers; deeper values are left as they are. */
const MAX_DEPTH = 8;

/**
 * `value` with every SECRET_KEYS entry censored, at any depth. Copy on write: a value with
 * nothing to censor (every request line) is returned as it is, after one look at each key.
 * Written here rather than pino's `redact` (fast-redact): that takes fixed paths, one level of
 * `*` per path, and its wildcard paths cost ~4 µs per request line (docs/benchmarks.md); this
 * walk costs a fraction of a microsecond for a request line and sees every level.
 */
export function redactSecrets<T>(value: T, depth = 0): T {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = redactSecrets(value[i], depth + 1);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    return (out ?? value) as T;
  }
  // Buffers, Maps and the like are written by their own serialisation, not walked.
  if (ArrayBuffer.isView(value) || value instanceof Map || value instanceof Set) return value;
  let out: Record<string, unknown> | null = null;
  const src = value as Record<string, unknown>;
  for (const key in src) {
    if (!Object.prototype.hasOwnProperty.call(src, key)) continue;
    const v = src[key];
    const next = SECRET_KEYS.has(key.toLowerCase()) && v !== undefined && v !== null ? CENSOR : redactSecrets(v, depth + 1);
    if (next !== v) (out ??= copyOf(src))[key] = next;
  }
  // An error's cause is its own property but not enumerable; pino's serialiser writes it.
  if (src instanceof Error && src.cause !== undefined) {
    const cause = redactSecrets(src.cause, depth + 1);
    if (cause !== src.cause) (out ??= copyOf(src)).cause = cause;
  }
  return (out ?? value) as T;
}

/** A copy that keeps an Error's message and stack (own, not enumerable) for the serialiser. */
function copyOf(src: Record<string, unknown>): Record<string, unknown> {
  if (!(src instanceof Error)) return { ...src };
  const copy = Object.create(Object.getPrototypeOf(src) as object) as Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(src)) {
    Object.defineProperty(copy, key, Object.getOwnPropertyDescriptor(src, key) as PropertyDescriptor);
  }
  return copy;
}

/**
 * JSON logs. Secrets, tokens, cookies and Authorization headers are censored wherever they
 * appear in a logged object (errors included, before pino's error serialiser reads them), as
 * a second line of defence: code never logs them on purpose.
 */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'combo-platform' },
      // Child loggers keep this formatter. Their bindings are not walked: code sets them, to
      // fixed values such as `{ job: 'notifications' }` and Fastify's request id.
      formatters: { log: (obj) => redactSecrets(obj) },
    },
    destination,
  );
}
