import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { group, parse, positionals, type Command, type Io } from './io.js';
import { print, table } from './output.js';

const keysPath = (gameId: string) => `/admin/v1/games/${encodeURIComponent(gameId)}/keys`;

async function create(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [gameId] = positionals(pos, ['game_id']);
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('POST', keysPath(gameId as string), {}));
  if (values.json !== true) io.err('\nThe secret_key above is shown only now. The old key stays valid until you delete it, and keeps signing\nnotifications and GM calls until the game signs a request with the new key.\n');
  return 0;
}

/** The game's active keys, newest first, and which one signs what the service sends it. */
async function list(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [gameId] = positionals(pos, ['game_id']) as [string];
  const game = (await AdminClient.fromOptions(values, io).call('GET', `/admin/v1/games/${encodeURIComponent(gameId)}`)) as { key_ids: string[]; signing_key_id: string | null };
  const rows = game.key_ids.map((k) => ({ key_id: k, signs_outgoing: k === game.signing_key_id ? 'yes' : 'no' }));
  if (values.json === true) print(io, true, { data: rows, signing_key_id: game.signing_key_id });
  else io.out(table(rows, ['key_id', 'signs_outgoing']));
  return 0;
}

async function remove(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [gameId, keyId] = positionals(pos, ['game_id', 'key_id']) as [string, string];
  const body = await AdminClient.fromOptions(values, io).call('DELETE', `${keysPath(gameId)}/${encodeURIComponent(keyId)}`);
  if (values.json === true) print(io, true, body);
  else io.out(`deleted key ${keyId} of game ${gameId}\n`);
  return 0;
}

export const keysCommand: Command = {
  name: 'keys',
  summary: "rotate a game's signing keys",
  help: `usage:
  combo-platform keys list <game_id>              the active keys, newest first; SIGNS_OUTGOING marks the
                                                  one notifications and GM calls are signed with
  combo-platform keys create <game_id>            a new key (at most two are active)
  combo-platform keys delete <game_id> <key_id>   retire a key (not the last one)

${ADMIN_OPTIONS_HELP}`,
  run: group({ list, create, delete: remove }),
};
