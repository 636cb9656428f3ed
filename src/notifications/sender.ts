import { performance } from 'node:perf_hooks';
import { OutboundBlockedError, type OutboundClient } from '../lib/outbound.js';
import { authorizationHeader } from '../signing/signer.js';

/** The first bytes of an answer kept in the attempt record (PROTOCOL 5: 1 KiB). */
export const SNIPPET_BYTES = 1024;
const MAX_ERROR_CHARS = 500;

export interface SendResult {
  /** HTTP status, or null when no answer came (time-out, connection error, refused URL). */
  statusCode: number | null;
  error: string | null;
  snippet: string | null;
  latencyMs: number;
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
  const latency = () => Math.round(performance.now() - t0);
  try {
    const u = new URL(d.notifyUrl);
    const authorization = authorizationHeader({ kind: 'game', id: d.gameId }, secret, 'POST', u.pathname + u.search, d.body, nowMs);
    const res = await outbound.post(
      d.notifyUrl,
      d.body,
      { 'content-type': 'application/json', authorization, 'user-agent': 'combo-platform-notifier/1' },
      { timeoutMs, maxBytes: SNIPPET_BYTES },
    );
    const ok = res.status >= 200 && res.status < 300;
    return {
      statusCode: res.status,
      error: ok ? null : `HTTP ${res.status}`,
      snippet: res.body.length ? res.body.toString('utf8') : null,
      latencyMs: latency(),
    };
  } catch (e) {
    return { statusCode: null, error: describeError(e, timeoutMs), snippet: null, latencyMs: latency() };
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ETIMEDOUT']);

/** A short, secret-free description of why an attempt got no answer. */
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
  return text.length > MAX_ERROR_CHARS ? text.slice(0, MAX_ERROR_CHARS) : text;
}
