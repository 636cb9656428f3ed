import { performance } from 'node:perf_hooks';
import { OutboundBlockedError, readUpTo, type OutboundClient } from '../lib/outbound.js';
import { authorizationHeader } from '../signing/signer.js';
import { wireUrl } from '../lib/wire-url.js';

/** The first bytes of an answer kept in the attempt record (PROTOCOL 5: 1 KiB). */
export const SNIPPET_BYTES = 1024;
const MAX_ERROR_CHARS = 500;

export interface SendResult {
  /** HTTP status, or null when no answer came (time-out, connection error, refused URL). */
  statusCode: number | null;
  /**
   * Whether the answer came whole (its first 1 KiB at least) within the time-out. Only then
   * does its status decide the outcome: PROTOCOL 5's success is "any 2xx within 10 s", so a
   * status line whose body then stalls is a failed attempt, its status kept for the record.
   */
  complete: boolean;
  error: string | null;
  snippet: string | null;
  latencyMs: number;
  /**
   * Of latencyMs, the time this thread's event loop sat idle, waiting for I/O: the most the
   * host can have taken. The rest the loop was running our own work (other answers, a batch
   * of records being committed), and an answer that had come meanwhile waited for it: that
   * wait says nothing about the host.
   */
  hostMs: number;
}

export interface Delivery {
  gameId: string;
  notifyUrl: string;
  body: string;
}

/**
 * One delivery attempt: POST the stored body to notify_url, signed afresh with the game's
 * current key (receiving SDKs reject timestamps older than 300 s). The URI signed is the one
 * sent: path plus `?` and the raw query. Redirects are not followed (a 3xx is a failure);
 * never throws.
 */
export async function sendNotification(
  outbound: OutboundClient,
  d: Delivery,
  secret: string,
  nowMs: number,
  timeoutMs: number,
): Promise<SendResult> {
  const t0 = performance.now();
  const idle0 = performance.eventLoopUtilization().idle;
  const latency = () => Math.round(performance.now() - t0);
  const hostMs = (ms: number) => Math.min(ms, Math.max(0, Math.round(performance.eventLoopUtilization().idle - idle0)));
  let statusCode: number | null = null;
  try {
    const u = wireUrl(d.notifyUrl);
    const authorization = authorizationHeader({ kind: 'game', id: d.gameId }, secret, 'POST', u.pathname + u.search, d.body, nowMs);
    const headers = { 'content-type': 'application/json', authorization, 'user-agent': 'combo-platform-notifier/1' };
    // Status first, body after: an answer whose body stalls still leaves its status on record.
    const res = await outbound.open(u.href, d.body, headers, timeoutMs);
    statusCode = res.statusCode;
    const { body, truncated } = await readUpTo(res.body, SNIPPET_BYTES);
    const ok = statusCode >= 200 && statusCode < 300;
    const latencyMs = latency();
    return { statusCode, complete: true, error: ok ? null : `HTTP ${statusCode}`, snippet: snippetOf(body, truncated), latencyMs, hostMs: hostMs(latencyMs) };
  } catch (e) {
    const why = describeError(e, timeoutMs);
    // The status came but not the body: the record keeps what the game did answer.
    const error = statusCode === null ? why : storableText(`HTTP ${statusCode}, then reading the answer body: ${why}`);
    const latencyMs = latency();
    return { statusCode, complete: false, error, snippet: null, latencyMs, hostMs: hostMs(latencyMs) };
  }
}

/** The recorded text of an answer's first bytes; null for an empty body. */
export function snippetOf(body: Buffer, truncated: boolean): string | null {
  // A cut at 1 KiB may fall inside a character: decoding its first bytes would end in U+FFFD.
  const whole = truncated ? wholeCharacters(body) : body;
  return whole.length ? storableText(whole.toString('utf8')) : null;
}

/**
 * `b` without a UTF-8 character cut off at its end: walks back over continuation bytes
 * (10xxxxxx) to the last lead byte and drops that character if it needs more bytes than are
 * left. Anything not UTF-8 is left as it is (decoding shows it as U+FFFD, as it should).
 */
export function wholeCharacters(b: Buffer): Buffer {
  let lead = b.length - 1;
  while (lead >= 0 && b.length - lead <= 3 && ((b[lead] as number) & 0xc0) === 0x80) lead--;
  if (lead < 0) return b;
  const first = b[lead] as number;
  const needs = first >= 0xf0 && first < 0xf8 ? 4 : first >= 0xe0 ? 3 : first >= 0xc0 ? 2 : 1;
  return lead + needs > b.length ? b.subarray(0, lead) : b;
}

/**
 * Text every database accepts. PostgreSQL refuses U+0000 in text ("invalid byte sequence for
 * encoding UTF8: 0x00"), and a game's answer (or an error message quoting one) may hold it:
 * it becomes U+FFFD, the replacement character.
 */
export function storableText(s: string): string {
  return s.replace(/\u0000/g, '\uFFFD');
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

/** A short, secret-free description of why an attempt got no (whole) answer. */
export function describeError(e: unknown, timeoutMs: number): string {
  const err = e as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  let text: string;
  if (e instanceof OutboundBlockedError || err.cause instanceof OutboundBlockedError) {
    text = `refused: ${(err.cause instanceof OutboundBlockedError ? err.cause : err).message}`;
  } else if (err.name === 'TimeoutError' || err.name === 'AbortError' || TIMEOUT_CODES.has(err.code ?? '')) {
    text = `timed out after ${timeoutMs} ms`;
  } else {
    const code = err.code ?? err.cause?.code;
    text = `${code ? `${code}: ` : ''}${err.message ?? String(e)}`;
  }
  return storableText(text.length > MAX_ERROR_CHARS ? text.slice(0, MAX_ERROR_CHARS) : text);
}
