import { Agent, request } from 'undici';
import { readUpTo } from '../lib/outbound.js';
import { sign, wireBody } from './nppa-crypto.js';

/** A game's national-system credentials (nppa.md "Per game credentials"). */
export interface NppaCredentials {
  appId: string;
  bizId: string;
  /** 32 hex characters. */
  secretKey: string;
}

/** One behaviour item of a `collections` body. */
export interface BehaviourItem {
  no: number;
  si: string;
  bt: 0 | 1;
  ot: number;
  ct: 0 | 2;
  di?: string;
  pi?: string;
}

/** The national system's answer: `errcode` 0 is success; `data.results` lists failed items. */
export interface NppaAnswer {
  errcode: number;
  errmsg: string;
  data?: unknown;
}

export interface ItemResult {
  no: number;
  errcode: number;
  errmsg: string;
}

/** No answer at all, or an answer that is not the national system's JSON. */
export class NppaTransportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NppaTransportError';
  }
}

export const NPPA_TIMEOUT_MS = 5000;
/** A real answer is a few KiB (one result per refused item, at most 128 items). */
export const NPPA_MAX_ANSWER_BYTES = 64 * 1024;

/**
 * HTTP client for the national system. Its base URL is operator configuration, not a
 * caller-given address, so no private-address blocking applies (tests use a local stand-in).
 */
export class NppaClient {
  private readonly agent = new Agent({ connections: 32, connectTimeout: NPPA_TIMEOUT_MS });

  constructor(private readonly timeoutMs = NPPA_TIMEOUT_MS) {}

  /** Encrypts, signs and POSTs `{"collections": items}` to `url`; `nowMs` becomes `timestamps`. */
  async sendBehaviour(url: string, creds: NppaCredentials, items: BehaviourItem[], nowMs: number): Promise<NppaAnswer> {
    const body = wireBody(creds.secretKey, { collections: items });
    const headers: Record<string, string> = { appId: creds.appId, bizId: creds.bizId, timestamps: String(nowMs) };
    const query = Object.fromEntries(new URL(url).searchParams);
    const signature = sign(creds.secretKey, { ...query, ...headers }, body);
    let status: number;
    let text: string;
    try {
      const res = await request(url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json; charset=utf-8', ...headers, sign: signature },
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
      status = res.statusCode;
      const { body: answer, truncated } = await readUpTo(res.body, NPPA_MAX_ANSWER_BYTES);
      if (truncated) throw new NppaTransportError(`HTTP ${status}: answer is over ${NPPA_MAX_ANSWER_BYTES} bytes`);
      text = answer.toString('utf8');
    } catch (e) {
      if (e instanceof NppaTransportError) throw e;
      throw new NppaTransportError(`request failed: ${(e as Error).message}`);
    }
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new NppaTransportError(`HTTP ${status}: answer is not JSON`);
    }
    const a = answer as NppaAnswer;
    if (typeof a?.errcode !== 'number') throw new NppaTransportError(`HTTP ${status}: answer has no errcode`);
    return { errcode: a.errcode, errmsg: String(a.errmsg ?? ''), data: a.data };
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** The per-item failures of an answer (`data.results`), tolerant of `data` being a string or null. */
export function itemResults(answer: NppaAnswer): ItemResult[] {
  const results = (answer.data as { results?: unknown } | null | undefined)?.results;
  if (!Array.isArray(results)) return [];
  return results
    .filter((r): r is ItemResult => typeof r?.no === 'number' && typeof r?.errcode === 'number')
    .map((r) => ({ no: r.no, errcode: r.errcode, errmsg: String(r.errmsg ?? '') }));
}
