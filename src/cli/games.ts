import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { bool, dataObject, defined, group, int, parse, parseJson, positionals, str, UsageError, type Command, type Io, type Values } from './io.js';
import { print } from './output.js';

const SETTINGS = {
  name: { type: 'string' },
  iap: { type: 'string' },
  sandbox: { type: 'string' },
  ttl: { type: 'string' },
  'gm-url': { type: 'string' },
  rate: { type: 'string' },
  data: { type: 'string' },
} as const;

/** The game settings the flags name (PROTOCOL 11), in the API's field names. */
function settings(v: Values): Record<string, unknown> {
  const gm = str(v, 'gm-url');
  return defined({
    name: str(v, 'name'),
    iap_enabled: bool(v, 'iap'),
    sandbox_payments: bool(v, 'sandbox'),
    order_ttl_seconds: int(v, 'ttl'),
    gm_url: gm === 'none' ? null : gm,
    rate_limit_per_second: int(v, 'rate'),
  });
}

const gamePath = (id: string) => `/admin/v1/games/${encodeURIComponent(id)}`;

async function create(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, ...SETTINGS, secret: { type: 'string' } });
  const [gameId] = positionals(pos, ['game_id']);
  const body: Record<string, unknown> = { ...(await dataObject(values, io)), game_id: gameId, ...settings(values), ...defined({ secret_key: str(values, 'secret') }) };
  if (body.name === undefined) throw new UsageError('--name is required');
  const game = await AdminClient.fromOptions(values, io).call('POST', '/admin/v1/games', body);
  print(io, values.json === true, game);
  if (values.json !== true) io.err('\nThe secret_key above is shown only now: store it with the game backend.\n');
  return 0;
}

async function get(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [gameId] = positionals(pos, ['game_id']);
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('GET', gamePath(gameId as string)));
  return 0;
}

const LIST_COLUMNS = ['game_id', 'name', 'iap_enabled', 'sandbox_payments', 'order_ttl_seconds', 'key_ids', 'created_at'];

async function list(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, limit: { type: 'string' }, cursor: { type: 'string' } });
  positionals(pos, []);
  const query = new URLSearchParams(defined({ limit: int(values, 'limit')?.toString(), cursor: str(values, 'cursor') }) as Record<string, string>);
  const path = `/admin/v1/games${query.size ? `?${query}` : ''}`;
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('GET', path), LIST_COLUMNS);
  return 0;
}

async function update(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, ...SETTINGS, nppa: { type: 'string' } });
  const [gameId] = positionals(pos, ['game_id']);
  const nppa = str(values, 'nppa');
  const body = { ...(await dataObject(values, io)), ...settings(values), ...(nppa === undefined ? {} : { nppa: nppa === 'none' ? null : parseJson(nppa, '--nppa') }) };
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('PATCH', gamePath(gameId as string), body));
  return 0;
}

export const gamesCommand: Command = {
  name: 'games',
  summary: 'create, show and change games',
  help: `usage:
  combo-platform games create <game_id> --name NAME [settings] [--secret SK]
  combo-platform games get <game_id>
  combo-platform games list [--limit N] [--cursor C]   games in id order, one page (next_cursor)
  combo-platform games update <game_id> [settings] [--nppa JSON|none]

settings:
  --name NAME        display name
  --iap BOOL         in-app purchase enabled (true/false)
  --sandbox BOOL     sandbox payments allowed (true/false)
  --ttl SECONDS      order lifetime (60..2592000)
  --gm-url URL|none  the game's GM endpoint (none clears it)
  --rate N           requests per second allowed to the game
  --data JSON        any other fields of the request body (JSON, @file or - for stdin)
  --secret SK        (create) use this secret key instead of a generated one
  --nppa JSON|none   (update) national-system settings {"app_id","biz_id","secret_key"}

${ADMIN_OPTIONS_HELP}`,
  run: group({ create, get, list, update }),
};
