import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { bool, dataObject, defined, group, parse, positionals, str, UsageError, type Command, type Io, type Values } from './io.js';
import { print } from './output.js';

const channelsPath = (gameId: string) => `/admin/v1/games/${encodeURIComponent(gameId)}/channels`;
const COLUMNS = ['channel', 'enabled', 'callback_url', 'updated_at'];

/** wechat and alipay settings given as flags: plain values inline, keys read from a file. */
const TEXT_FLAGS = { mchid: 'mchid', appid: 'appid', 'merchant-serial-no': 'merchant_serial_no', 'wechatpay-public-key-id': 'wechatpay_public_key_id', 'app-id': 'app_id' } as const;
/**
 * Keys as files (PATH, or - for standard input): secrets never on the command line, where
 * the shell history and the process list would keep them. `api_v3_key` is trimmed (a file
 * ends with a newline); PEM keys are sent as they are.
 */
const FILE_FLAGS = {
  'merchant-private-key-file': 'merchant_private_key',
  'api-v3-key-file': 'api_v3_key',
  'wechatpay-public-key-file': 'wechatpay_public_key',
  'app-private-key-file': 'app_private_key',
  'alipay-public-key-file': 'alipay_public_key',
} as const;

async function fileFlags(values: Values, io: Io): Promise<Record<string, string>> {
  const given = Object.entries(FILE_FLAGS).filter(([flag]) => str(values, flag) !== undefined);
  const fromStdin = [...given.map(([flag]) => [flag, str(values, flag)]), ['data', str(values, 'data')]].filter(([, v]) => v === '-');
  if (fromStdin.length > 1) throw new UsageError(`only one of --${fromStdin.map(([f]) => f).join(', --')} can read standard input (-)`);
  const out: Record<string, string> = {};
  for (const [flag, field] of given) {
    const spec = str(values, flag) as string;
    let text: string;
    try {
      text = spec === '-' ? await io.readStdin() : await (await import('node:fs/promises')).readFile(spec, 'utf8');
    } catch (e) {
      throw new UsageError(`--${flag}: cannot read ${spec}: ${(e as Error).message}`);
    }
    out[field] = field === 'api_v3_key' ? text.trim() : text;
  }
  return out;
}

/** PUT a channel: --enabled, the usual fields as flags, anything else (google's service account) with --data. */
async function set(args: string[], io: Io): Promise<number> {
  const options = {
    ...ADMIN_OPTIONS,
    enabled: { type: 'string' },
    'bundle-id': { type: 'string' },
    'app-apple-id': { type: 'string' },
    'accept-sandbox': { type: 'string' },
    'package-name': { type: 'string' },
    ...Object.fromEntries([...Object.keys(TEXT_FLAGS), ...Object.keys(FILE_FLAGS)].map((f) => [f, { type: 'string' as const }])),
    data: { type: 'string' },
  } as const;
  const { values, positionals: pos } = parse(args, options);
  const [gameId, channel] = positionals(pos, ['game_id', 'channel']) as [string, string];
  const appAppleId = str(values, 'app-apple-id');
  const flags = defined({
    enabled: bool(values, 'enabled'),
    bundle_id: str(values, 'bundle-id'),
    // Sent as given: the service says when it is not an integer.
    app_apple_id: appAppleId === undefined ? undefined : /^\d+$/.test(appAppleId) ? Number(appAppleId) : appAppleId,
    accept_sandbox: bool(values, 'accept-sandbox'),
    package_name: str(values, 'package-name'),
    ...Object.fromEntries(Object.entries(TEXT_FLAGS).map(([flag, field]) => [field, str(values, flag)])),
  });
  const files = await fileFlags(values, io);
  const body = { ...(await dataObject(values, io)), ...flags, ...files };
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('PUT', `${channelsPath(gameId)}/${encodeURIComponent(channel)}`, body));
  return 0;
}

/** One channel, or every channel of the game. */
async function get(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const client = AdminClient.fromOptions(values, io);
  if (pos.length === 1) {
    print(io, values.json === true, await client.call('GET', channelsPath(pos[0] as string)), COLUMNS);
    return 0;
  }
  const [gameId, channel] = positionals(pos, ['game_id', 'channel']) as [string, string];
  print(io, values.json === true, await client.call('GET', `${channelsPath(gameId)}/${encodeURIComponent(channel)}`));
  return 0;
}

async function remove(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [gameId, channel] = positionals(pos, ['game_id', 'channel']) as [string, string];
  const body = await AdminClient.fromOptions(values, io).call('DELETE', `${channelsPath(gameId)}/${encodeURIComponent(channel)}`);
  if (values.json === true) print(io, true, body);
  else io.out(`deleted channel ${channel} of game ${gameId}\n`);
  return 0;
}

export const channelsCommand: Command = {
  name: 'channels',
  summary: "manage a game's payment channels (sandbox, apple, google, wechat, alipay)",
  help: `usage:
  combo-platform channels set <game_id> sandbox --enabled BOOL
  combo-platform channels set <game_id> apple --enabled BOOL --bundle-id ID [--app-apple-id N] [--accept-sandbox BOOL]
  combo-platform channels set <game_id> google --enabled BOOL --package-name NAME --data @google.json
  combo-platform channels set <game_id> wechat --enabled BOOL --mchid ID --appid ID --merchant-serial-no SERIAL
      --merchant-private-key-file apiclient_key.pem --api-v3-key-file FILE
      --wechatpay-public-key-id PUB_KEY_ID_... --wechatpay-public-key-file pub_key.pem
  combo-platform channels set <game_id> alipay --enabled BOOL --app-id APPID
      --app-private-key-file app_private_key.pem --alipay-public-key-file alipay_public_key.pem
  combo-platform channels get <game_id> [<channel>]
  combo-platform channels delete <game_id> <channel>

  set replaces the channel's settings. --data JSON adds other body fields (JSON, @file or - for
  stdin), e.g. google's {"service_account": {"client_email": ..., "private_key": ...}}.
  --*-file flags read a key from a file, or from standard input with - (one flag at most):
  secrets are never given on the command line. set replaces the whole channel, so every
  secret is given again each time. Secrets are write-only: get shows them as "***".
  callback_url is what to register in the provider's console.

${ADMIN_OPTIONS_HELP}`,
  run: group({ set, get, delete: remove }),
};
