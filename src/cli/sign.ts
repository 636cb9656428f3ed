import { authorizationHeader, computeSignature, parseTimestamp, sha256Hex, stringToSign, type Principal } from '../signing/signer.js';
import { parse, readData, str, UsageError, type Command, type Io, type Values } from './io.js';

/** The caller a signature names: --game G or --partner P (exactly one). */
export function principalOf(values: Values): Principal {
  const game = str(values, 'game');
  const partner = str(values, 'partner');
  if ((game === undefined) === (partner === undefined)) throw new UsageError('give exactly one of --game or --partner');
  return game !== undefined ? { kind: 'game', id: game } : { kind: 'partner', id: partner as string };
}

export function secretOf(values: Values, io: Io): string {
  const secret = str(values, 'secret') ?? io.env.COMBO_SECRET_KEY;
  if (!secret) throw new UsageError('--secret (or env COMBO_SECRET_KEY) is required');
  return secret;
}

/** POSIX shell single-quoting, so the printed curl command sends exactly these bytes. */
export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Where the request goes: --uri, or the path of the --curl URL. */
function target(values: Values): { uri: string; url?: string } {
  const curl = str(values, 'curl');
  let uri = str(values, 'uri');
  // A target without its leading / can never be sent as signed.
  if (uri !== undefined && uri !== '' && !uri.startsWith('/')) throw new UsageError(`--uri must start with / (the path and query string as sent; got "${uri}")`);
  if (curl === undefined) {
    if (!uri) throw new UsageError('--uri is required (the path and query string, e.g. /v1/server/create-order)');
    return { uri };
  }
  let u: URL;
  try {
    u = new URL(curl);
  } catch {
    throw new UsageError(`--curl must be an absolute URL (got "${curl}")`);
  }
  if (!uri) {
    uri = u.pathname + u.search;
    if (uri === '/') throw new UsageError('--uri is required when the --curl URL has no path');
    return { uri, url: u.origin + uri };
  }
  return { uri, url: curl.replace(/\/+$/, '') + uri };
}

async function run(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, {
    game: { type: 'string' },
    partner: { type: 'string' },
    secret: { type: 'string' },
    method: { type: 'string', short: 'X' },
    uri: { type: 'string' },
    data: { type: 'string', short: 'd' },
    timestamp: { type: 'string' },
    curl: { type: 'string' },
    json: { type: 'boolean' },
  });
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const principal = principalOf(values);
  const secret = secretOf(values, io);
  const spec = str(values, 'data');
  // The exact bytes given are signed and sent: no re-serialisation (the signature covers them).
  const body = spec === undefined ? '' : await readData(spec, io);
  const method = (str(values, 'method') ?? (spec === undefined ? 'GET' : 'POST')).toUpperCase();
  const { uri, url } = target(values);
  const ts = str(values, 'timestamp');
  const nowMs = ts === undefined ? Date.now() : parseTimestamp(ts);
  if (nowMs === null) throw new UsageError('--timestamp must be YYYYMMDDTHHMMSSZ (UTC)');
  const authorization = authorizationHeader(principal, secret, method, uri, body, nowMs);
  const curl = url === undefined ? undefined : curlCommand(method, url, authorization, spec === undefined ? undefined : body);

  if (values.json === true) {
    const timestamp = /Timestamp=([^,]+)/.exec(authorization)?.[1] as string;
    const out = {
      authorization,
      method,
      uri,
      timestamp,
      body_sha256: sha256Hex(body),
      string_to_sign: stringToSign(method, uri, timestamp, sha256Hex(body)),
      signature: computeSignature(secret, method, uri, timestamp, body),
      ...(curl ? { curl } : {}),
    };
    io.out(`${JSON.stringify(out, null, 2)}\n`);
  } else io.out(`${curl ?? authorization}\n`);
  return 0;
}

function curlCommand(method: string, url: string, authorization: string, body: string | undefined): string {
  const parts = ['curl', '-sS', '-X', method, shellQuote(url), '-H', shellQuote(`Authorization: ${authorization}`)];
  if (body !== undefined) parts.push('-H', shellQuote('Content-Type: application/json'), '--data-raw', shellQuote(body));
  return parts.join(' ');
}

export const signCommand: Command = {
  name: 'sign',
  summary: 'sign a request as a game or partner (prints the Authorization header or a curl command)',
  help: `usage:
  combo-platform sign --game G --secret SK [--method M] --uri URI [--data JSON|@file|-] [--curl BASE_URL] [--timestamp TS] [--json]
  combo-platform sign --partner P --secret SK ...

  Prints the SEAYOO-HMAC-SHA256 Authorization header (PROTOCOL 1) for one request, valid for
  300 s. The body is signed byte for byte as given; send exactly those bytes.
  --method     default POST with --data, GET without
  --uri        the path and query string as sent, e.g. /v1/server/create-order
  --secret     the secret key, including sk_ (env COMBO_SECRET_KEY keeps it out of argv)
  --curl URL   print a complete curl command to URL + URI instead (or URL alone when it has the path)
  --timestamp  sign at this time (YYYYMMDDTHHMMSSZ) instead of now, e.g. to check test vectors
  --json       also show the string to sign, body hash and signature (for debugging a signer)`,
  run,
};
