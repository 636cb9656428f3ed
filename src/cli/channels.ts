import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { bool, dataObject, defined, group, parse, positionals, str, type Command, type Io } from './io.js';
import { print } from './output.js';

const channelsPath = (gameId: string) => `/admin/v1/games/${encodeURIComponent(gameId)}/channels`;
const COLUMNS = ['channel', 'enabled', 'callback_url', 'updated_at'];

/** PUT a channel: --enabled, the usual fields as flags, anything else (google's service account) with --data. */
async function set(args: string[], io: Io): Promise<number> {
  const options = {
    ...ADMIN_OPTIONS,
    enabled: { type: 'string' },
    'bundle-id': { type: 'string' },
    'app-apple-id': { type: 'string' },
    'accept-sandbox': { type: 'string' },
    'package-name': { type: 'string' },
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
  });
  const body = { ...(await dataObject(values, io)), ...flags };
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
  summary: "manage a game's payment channels (sandbox, apple, google)",
  help: `usage:
  combo-platform channels set <game_id> sandbox --enabled BOOL
  combo-platform channels set <game_id> apple --enabled BOOL --bundle-id ID [--app-apple-id N] [--accept-sandbox BOOL]
  combo-platform channels set <game_id> google --enabled BOOL --package-name NAME --data @google.json
  combo-platform channels get <game_id> [<channel>]
  combo-platform channels delete <game_id> <channel>

  set replaces the channel's settings. --data JSON adds other body fields (JSON, @file or - for
  stdin), e.g. google's {"service_account": {"client_email": ..., "private_key": ...}}.
  Secrets are write-only: get shows them as "***". callback_url is what to paste into the
  provider's console.

${ADMIN_OPTIONS_HELP}`,
  run: group({ set, get, delete: remove }),
};
