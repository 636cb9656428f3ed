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
/** Past this depth a value is replaced whole (fail closed: nothing deeper is written unread). */
const MAX_DEPTH = 64;
const TOO_DEEP = '[redacted: nested too deep]';
const CIRCULAR = '[Circular]';
/** Objects met in one walk: their censored form, or IN_PROGRESS while on the current path. */
type Seen = Map<object, unknown>;
const IN_PROGRESS = Symbol('in progress');

/**
 * `value` with every SECRET_KEYS entry censored, at any depth. Copy on write: a value with
 * nothing to censor (every request line) is returned as it is, after one look at each key.
 * Written here rather than pino's `redact` (fast-redact): that takes fixed paths, one level of
 * `*` per path, and its wildcard paths cost microseconds per request line; this
 * walk costs a fraction of a microsecond for a request line and sees every level. An object met
 * twice gets the same censored form (a shared object is censored everywhere), one that refers
 * back to itself is written "[Circular]", and past MAX_DEPTH levels the rest is replaced.
 */
export function redactSecrets<T>(value: T): T {
  // Most lines hold no secret: they are written exactly as given (cycles, toJSON and getters
  // left to pino), after a look at each key. Only a line with one is copied.
  try {
    if (!containsSecret(value, 0)) return value;
  } finally {
    if (looked.size !== 0) looked.clear();
  }
  return walk(value, 0, new Map());
}

/** Objects that are walked: Buffers, Maps and the like are written by their own serialisation. */
function walkable(value: unknown): value is object {
  return value !== null && typeof value === 'object' && !ArrayBuffer.isView(value) && !(value instanceof Map) && !(value instanceof Set);
}

const isSecretEntry = (key: string, v: unknown): boolean => SECRET_KEYS.has(key.toLowerCase()) && v !== undefined && v !== null;

/** Objects already looked at by containsSecret in this call (one thread: reused, cleared). */
const looked = new Set<object>();

function containsSecret(value: unknown, depth: number): boolean {
  if (!walkable(value)) return false;
  if (depth > MAX_DEPTH) return true; // fail closed: the walk replaces what is this deep
  // The top object is not recorded (a flat request line touches no set): a cycle back to it
  // looks at it once more, then finds it recorded.
  if (depth > 0) {
    if (looked.has(value)) return false;
    looked.add(value);
  }
  if (Array.isArray(value)) return value.some((v) => containsSecret(v, depth + 1));
  const src = value as Record<string, unknown>;
  for (const key in src) {
    if (!Object.prototype.hasOwnProperty.call(src, key)) continue;
    const v = src[key];
    if (isSecretEntry(key, v) || containsSecret(v, depth + 1)) return true;
  }
  for (const hidden of hiddenParts(src)) if (containsSecret(hidden[1], depth + 1)) return true;
  return false;
}

/**
 * An error's own properties that are not enumerable but that pino's serialiser writes: its
 * cause, and an AggregateError's errors.
 */
function hiddenParts(src: object): [string, unknown][] {
  if (!(src instanceof Error)) return [];
  const parts: [string, unknown][] = [];
  if (src.cause !== undefined) parts.push(['cause', src.cause]);
  if (src instanceof AggregateError) parts.push(['errors', src.errors]);
  return parts;
}

function walk<T>(value: T, depth: number, seen: Seen): T {
  if (!walkable(value)) return value;
  if (seen.has(value)) {
    const done = seen.get(value);
    return (done === IN_PROGRESS ? CIRCULAR : done) as T;
  }
  if (depth > MAX_DEPTH) return TOO_DEEP as T;
  seen.set(value, IN_PROGRESS);
  let result: unknown;
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v = walk(value[i], depth + 1, seen);
      if (v !== value[i]) (out ??= value.slice())[i] = v;
    }
    result = out ?? value;
  } else {
    let out: Record<string, unknown> | null = null;
    const src = value as Record<string, unknown>;
    for (const key in src) {
      if (!Object.prototype.hasOwnProperty.call(src, key)) continue;
      const v = src[key];
      const next = isSecretEntry(key, v) ? CENSOR : walk(v, depth + 1, seen);
      if (next !== v) (out ??= copyOf(src))[key] = next;
    }
    for (const [key, hidden] of hiddenParts(src)) {
      const next = walk(hidden, depth + 1, seen);
      if (next !== hidden) (out ??= copyOf(src))[key] = next;
    }
    result = out ?? value;
  }
  seen.set(value, result);
  return result as T;
}

/**
 * A copy that keeps an Error's message and stack (own, not enumerable) for the serialiser. An
 * own accessor is copied as the value it gives on the original: from Node 22 on, V8 makes an
 * error's `stack` an own getter that reads the error it was made for, and on another object it
 * gives undefined.
 */
function copyOf(src: Record<string, unknown>): Record<string, unknown> {
  if (!(src instanceof Error)) return { ...src };
  const copy = Object.create(Object.getPrototypeOf(src) as object) as Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(src)) {
    const d = Object.getOwnPropertyDescriptor(src, key) as PropertyDescriptor;
    const own = d.get ? { value: src[key], writable: true, enumerable: d.enumerable, configurable: true } : d;
    Object.defineProperty(copy, key, own);
  }
  return copy;
}

/**
 * The logged object, censored; if it cannot be copied for that (a getter-only property to
 * censor, an object with internal slots), it is left out rather than written unread, and the
 * log call itself does not throw.
 */
function safelyRedacted(obj: Record<string, unknown>): Record<string, unknown> {
  try {
    return redactSecrets(obj);
  } catch {
    return { redactionFailed: 'the logged object could not be censored and was left out' };
  }
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
      formatters: { log: safelyRedacted },
    },
    destination,
  );
}
