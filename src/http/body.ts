import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Errors } from '../errors.js';
import { isJsonContentType } from '../lib/media-type.js';
import { UNSTORABLE } from '../lib/unstorable.js';
import { announcesBody } from './body-presence.js';
import { integerWrittenWithFraction } from './integer-literals.js';
import { routeOf, type JsonSchema } from './route-info.js';

/*
 * The request body: its headers screened before it is read (415, 413), its bytes kept raw for
 * the signature, and parsed only after the signature, rate limit and caller-state checks (a
 * 400 comes after 401, 429 and 403: PROTOCOL 2).
 */

export const BODY_LIMIT = 64 * 1024;
export const bodyTooLarge = () => Errors.bodyTooLarge(`request body must be at most ${BODY_LIMIT} bytes`);
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * Keeps the raw bytes: the signature covers them, and malformed JSON must be reported only
 * after the signature check (400 comes after 401).
 */
export function installBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (req, body, done) => {
    req.rawBody = body as Buffer;
    done(null, undefined);
  });
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (req, body, done) => {
    req.rawBody = body as Buffer;
    done(null, undefined);
  });
}

/**
 * The body's headers, checked before it is read, after the 404/405 (PROTOCOL 2 order: method
 * -> media type (415) -> size (413) -> ...).
 */
export function screenBodyHeaders(req: FastifyRequest, reply: FastifyReply): void {
  if (BODY_METHODS.has(req.method)) {
    if (req.headers['content-encoding'] !== undefined) refuseCoding('Content-Encoding', req.headers['content-encoding'], 'identity');
    if (req.headers['transfer-encoding'] !== undefined) refuseCoding('Transfer-Encoding', req.headers['transfer-encoding'], 'chunked');
    if (routeOf(req).url && routeOf(req).config.auth !== 'provider' && !isJsonContentType(req.headers['content-type'])) {
      // An action that takes no body (redeliver, new key, cancel) may be sent without one.
      if (!(bodyOptional(req) && !announcesBody(req.headers))) throw Errors.unsupportedMediaType('Content-Type must be application/json');
    }
    // Here, not when the body is read: the headers' signature checks come next (413 before 401).
    // HTTP/1.1: the connection closes after the answer rather than reading the body to its end.
    if (Number(req.headers['content-length']) > BODY_LIMIT) {
      if (req.raw.httpVersionMajor === 1) reply.header('connection', 'close');
      throw bodyTooLarge();
    }
  } else if (announcesBody(req.headers)) screenUnwantedBody(req);
}

/** The body, parsed after authentication, with what no database can store refused. */
export function prepareBody(req: FastifyRequest): void {
  // NUL cannot be stored in PostgreSQL text and is never meaningful in an id or filter: a
  // parameter error (400), so after the signature, rate limit and caller state (PROTOCOL 2).
  if (req.url.includes('%00')) throw Errors.invalidRequest(nulMessage(req.url));
  const route = routeOf(req);
  const cfg = route.config;
  if (!BODY_METHODS.has(req.method)) {
    if (req.rawBody && req.rawBody.length > 0) throw Errors.invalidRequest(`${req.method} ${route.url} takes no request body`);
  } else {
    const empty = !req.rawBody || req.rawBody.length === 0;
    if (empty && bodyOptional(req)) req.body = {};
    // A provider's callback in its own format (a form post): the route reads the text.
    else if (cfg.auth === 'provider' && !isJsonContentType(req.headers['content-type'])) req.body = bodyText(req.rawBody);
    else if (!isJsonContentType(req.headers['content-type'])) throw Errors.unsupportedMediaType('Content-Type must be application/json');
    else {
      const text = bodyText(req.rawBody);
      req.body = parseJsonBody(text);
      const field = integerWrittenWithFraction(text, route.bodySchema);
      if (field) throw Errors.invalidRequest(`${field} must be an integer, written without a fraction part (2, not 2.0)`);
    }
  }
  // NUL and lone surrogates can only arrive percent-encoded in the URL or as \\u escapes in
  // JSON (raw bytes of either are refused earlier): skip the walk when neither is present.
  if (req.url.includes('%')) {
    rejectBadPercentEncoding(req.url);
    rejectUnstorable(req.params, 'path parameter ');
    rejectUnstorable(req.query, 'query parameter ');
  }
  if (req.rawBody?.includes(BACKSLASH_U)) rejectUnstorable(req.body, '');
  // The ""-as-absent rule is for SDK callers (PROTOCOL 3); an operator's "" is a value to validate.
  if (cfg.auth !== 'admin' && cfg.auth !== 'provider') stripEmptyOptionalStrings(req.body, route.bodySchema);
}

function nulMessage(url: string): string {
  const q = url.indexOf('?');
  if (q >= 0) {
    for (const [name, value] of new URLSearchParams(url.slice(q + 1))) {
      if (value.includes('\0') || name.includes('\0')) return `query parameter ${name.replace(/\0/g, '')} must not contain U+0000`;
    }
  }
  return 'the path must not contain %00';
}

/** A route whose body has no required field (or no body schema at all) can go without a body. */
function bodyOptional(req: FastifyRequest): boolean {
  const schema = routeOf(req).bodySchema;
  return !schema || !schema.required || schema.required.length === 0;
}

/** The body as text: it must be there, and be UTF-8. */
function bodyText(raw: Buffer | undefined): string {
  if (!raw || raw.length === 0) throw Errors.invalidRequest('request body must be a JSON object');
  if (!isUtf8(raw)) throw Errors.invalidRequest('request body is not valid UTF-8');
  return raw.toString('utf8');
}

/**
 * Bodies are read as sent, never decompressed, and the signature covers those bytes: a coded
 * body is a media-type problem (415, RFC 9110 15.5.16), not malformed JSON, and a plain body
 * labelled as coded is not taken on trust. Node's parser takes `Transfer-Encoding: gzip,
 * chunked` and undoes only the chunking: any transfer coding but chunked is refused alike.
 */
function refuseCoding(header: 'Content-Encoding' | 'Transfer-Encoding', value: string, plain: 'identity' | 'chunked'): void {
  if (value.trim().toLowerCase() === plain) return;
  throw Errors.unsupportedMediaType(`${header} ${JSON.stringify(value.slice(0, 32))} is not supported${header === 'Transfer-Encoding' ? ': only chunked' : ''}; send the body uncompressed`);
}

/**
 * The router's query parser keeps a sequence it cannot decode (`%FF`, `%zz`, an encoded lone
 * surrogate) as literal text, so `%FF` and `%25FF` would name the same value: a parameter
 * error instead, as the path's own check answers it.
 */
function rejectBadPercentEncoding(url: string): void {
  const q = url.indexOf('?');
  if (q < 0 || !url.includes('%', q)) return;
  for (const pair of url.slice(q + 1).split('&')) {
    try {
      decodeURIComponent(pair);
    } catch {
      const name = pair.split('=')[0] as string;
      let shown = name;
      try {
        shown = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // the name itself is the bad part: shown as sent
      }
      throw Errors.invalidRequest(`query parameter ${shown.slice(0, 64)} is not valid percent-encoded UTF-8`);
    }
  }
}

/**
 * A body sent with a method whose routes take none (GET, DELETE): PROTOCOL 2's media type and
 * size checks apply to it as to any body (415, 413); once the signature, which covers its bytes,
 * has been checked, it is refused as a parameter error (400, in prepareBody).
 */
export function screenUnwantedBody(req: FastifyRequest): void {
  if (req.headers['content-encoding'] !== undefined) refuseCoding('Content-Encoding', req.headers['content-encoding'], 'identity');
  if (!isJsonContentType(req.headers['content-type'])) throw Errors.unsupportedMediaType('a request body needs Content-Type: application/json');
  const len = Number(req.headers['content-length']);
  if (len > BODY_LIMIT) throw bodyTooLarge();
}

/** Reads a GET's body (Fastify leaves it unread) into rawBody, at most BODY_LIMIT bytes. */
export function readUnwantedBody(req: FastifyRequest): Promise<void> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const raw = req.raw;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > BODY_LIMIT) {
        raw.off('data', onData);
        reject(bodyTooLarge());
      } else chunks.push(chunk);
    };
    raw.on('data', onData);
    raw.once('end', () => {
      req.rawBody = Buffer.concat(chunks);
      resolve();
    });
    raw.once('error', reject);
  });
}

function parseJsonBody(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw Errors.invalidRequest(`request body is not valid JSON: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw Errors.invalidRequest('request body must be a JSON object');
  }
  return value;
}

/**
 * Strings that no database stores as sent are refused as bad parameters (400) instead of
 * failing at the INSERT (500 on PostgreSQL) or being silently replaced by U+FFFD.
 */
const BACKSLASH_U = Buffer.from('\\u');

function rejectUnstorable(value: unknown, where: string): void {
  // Iterative: a 64 KiB body can nest ~32k levels deep, too deep for recursion.
  const stack: [unknown, string][] = [[value, '']];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [v, path] = item;
    if (typeof v === 'string') {
      if (UNSTORABLE.test(v)) throw Errors.invalidRequest(`${where}${shortPath(path) || 'value'} contains U+0000 or an unpaired surrogate`);
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
        const p = path ? `${path}.${k}` : k;
        if (UNSTORABLE.test(k)) throw Errors.invalidRequest(`${where}a field name in ${shortPath(path) || 'the body'} contains U+0000 or an unpaired surrogate`);
        stack.push([child, p]);
      }
    }
  }
}

const shortPath = (p: string) => (p.length > 80 ? `${p.slice(0, 80)}...` : p);

/**
 * PROTOCOL 3: an optional string field sent as "" is treated as absent (the Node SDK sends
 * `context: ""`). Driven by the route's own schema, recursively.
 */
function stripEmptyOptionalStrings(value: unknown, schema: JsonSchema | undefined): void {
  if (!schema?.properties || value === null || typeof value !== 'object' || Array.isArray(value)) return;
  const obj = value as Record<string, unknown>;
  const { strings, objects } = optionalFieldsOf(schema);
  for (const name of strings) if (obj[name] === '') delete obj[name];
  for (const [name, prop] of objects) stripEmptyOptionalStrings(obj[name], prop);
}

const optionalFields = new WeakMap<JsonSchema, { strings: string[]; objects: [string, JsonSchema][] }>();

/** A schema's optional string fields and its object fields, worked out once per schema. */
function optionalFieldsOf(schema: JsonSchema): { strings: string[]; objects: [string, JsonSchema][] } {
  let fields = optionalFields.get(schema);
  if (!fields) {
    const required = new Set(schema.required ?? []);
    const props = Object.entries(schema.properties ?? {});
    fields = {
      strings: props.filter(([name, prop]) => prop.type === 'string' && !required.has(name)).map(([name]) => name),
      objects: props.filter(([, prop]) => prop.type === 'object'),
    };
    optionalFields.set(schema, fields);
  }
  return fields;
}
