import { CommandError, UsageError, str, type Io, type Options, type Values } from './io.js';
import { encodeOperatorName } from '../lib/operator-name.js';

/** Options every command that talks to the admin API accepts. */
export const ADMIN_OPTIONS: Options = {
  url: { type: 'string' },
  token: { type: 'string' },
  operator: { type: 'string' },
  json: { type: 'boolean' },
  timeout: { type: 'string' },
};

export const ADMIN_OPTIONS_HELP = `connection (every admin command):
  --url URL         the service (env COMBO_URL, default http://localhost:8080)
  --token TOKEN     ADMIN_TOKEN or an API key ak_... (env ADMIN_TOKEN; prefer the env: argv is visible to others)
  --operator NAME   sent as X-Operator (env COMBO_OPERATOR); informational: the audit log records the
                    credential (ADMIN_TOKEN, or the API key's name)
  --json            print the API's JSON answer instead of a table
  --timeout SEC     give up on a request after SEC seconds (default 30)`;

export interface ApiAnswer {
  status: number;
  body: unknown;
  text: string;
}

/** A client of the operator API (PROTOCOL 11): bearer token, JSON in and out. */
export class AdminClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
    private readonly operator: string | undefined,
    private readonly timeoutMs: number,
  ) {}

  static fromOptions(values: Values, io: Io): AdminClient {
    const base = (str(values, 'url') ?? io.env.COMBO_URL ?? 'http://localhost:8080').replace(/\/+$/, '');
    try {
      const u = new URL(base);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    } catch {
      throw new UsageError(`--url must be an http(s) URL (got "${base}")`);
    }
    const token = str(values, 'token') ?? io.env.ADMIN_TOKEN;
    if (!token) throw new UsageError('--token (or ADMIN_TOKEN in the environment) is required: the admin token');
    const timeout = str(values, 'timeout') ?? '30';
    if (!/^\d+$/.test(timeout) || Number(timeout) < 1) throw new UsageError('--timeout must be a whole number of seconds >= 1');
    const operator = str(values, 'operator') ?? io.env.COMBO_OPERATOR;
    // What the service takes as X-Operator (docs/api.md): anything else would be dropped from the
    // audit log without a word. Names in other scripts than ASCII travel encoded (RFC 8187).
    const header = operator ? encodeOperatorName(operator) : undefined;
    if (header === null) {
      throw new UsageError('--operator (or COMBO_OPERATOR) must be 1 to 64 characters, without spaces at either end and none of them control or invisible ones (it is sent as the X-Operator header)');
    }
    return new AdminClient(base, token, header, Number(timeout) * 1000);
  }

  /** Any request; the answer whatever its status. Network failures are CommandErrors. */
  async request(method: string, path: string, body?: unknown): Promise<ApiAnswer> {
    if (!path.startsWith('/')) throw new UsageError(`path must start with / (got "${path}")`);
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (this.operator) headers['x-operator'] = this.operator;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, {
        method: method.toUpperCase(),
        headers,
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'manual',
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      throw new CommandError(`cannot reach ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
    }
    const text = await res.text();
    let parsed: unknown = text;
    if ((res.headers.get('content-type') ?? '').includes('json') && text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: res.status, body: parsed, text };
  }

  /** A request that must succeed (2xx); otherwise an ApiFailure carrying the ErrorResponse. */
  async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const a = await this.request(method, path, body);
    if (a.status < 200 || a.status > 299) throw new ApiFailure(a);
    return a.body;
  }
}

/** A non-2xx answer: `error: <status> <code>: <message>`; with --json the body goes to stdout. */
export class ApiFailure extends CommandError {
  constructor(readonly answer: ApiAnswer) {
    const b = answer.body as { error?: unknown; message?: unknown } | string;
    const detail = typeof b === 'object' && b !== null && typeof b.error === 'string' ? `${b.error}: ${String(b.message)}` : answer.text.slice(0, 200);
    super(`HTTP ${answer.status} ${detail}`);
  }
}
