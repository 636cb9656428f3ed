import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { defined, group, parse, positionals, required, str, UsageError, type Command, type Io, type Values } from './io.js';
import { print } from './output.js';

const ACCOUNT = { role: { type: 'string' }, games: { type: 'string' }, name: { type: 'string' } } as const;

/** `--games a,b`: those games; `--games all`: every game (null). */
function games(v: Values): string[] | null | undefined {
  const g = str(v, 'games');
  if (g === undefined) return undefined;
  if (g === 'all') return null;
  const list = g.split(',').map((x) => x.trim()).filter(Boolean);
  if (list.length === 0) throw new UsageError('--games must be game ids separated by commas, or all');
  return list;
}

const operatorPath = (id: string) => `/admin/v1/operators/${encodeURIComponent(id)}`;

async function invite(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, ...ACCOUNT });
  const [email] = positionals(pos, ['email']) as [string];
  const body = defined({ email, name: str(values, 'name') ?? email.split('@')[0], role: required(values, 'role'), games: games(values) });
  const created = (await AdminClient.fromOptions(values, io).call('POST', '/admin/v1/operators', body)) as { invitation: { invitation_url: string } };
  print(io, values.json === true, created);
  if (values.json !== true) io.err(`\nSend this link to ${email}: it sets the password, works once and for 72 hours:\n${created.invitation.invitation_url}\n`);
  return 0;
}

async function reinvite(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [id] = positionals(pos, ['operator_id']) as [string];
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('POST', `${operatorPath(id)}/invitation`, {}));
  return 0;
}

async function list(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, ADMIN_OPTIONS);
  const body = await AdminClient.fromOptions(values, io).call('GET', '/admin/v1/operators');
  print(io, values.json === true, body, ['operator_id', 'email', 'name', 'role', 'games', 'status', 'totp_enabled']);
  return 0;
}

async function update(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, ...ACCOUNT, enable: { type: 'boolean' } });
  const [id] = positionals(pos, ['operator_id']) as [string];
  const body = defined({ name: str(values, 'name'), role: str(values, 'role'), games: games(values), disabled: values.enable === true ? false : undefined });
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('PATCH', operatorPath(id), body));
  return 0;
}

async function disable(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [id] = positionals(pos, ['operator_id']) as [string];
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('DELETE', operatorPath(id)));
  return 0;
}

export const operatorsCommand: Command = {
  name: 'operators',
  summary: 'operator accounts: invite, list, change, disable',
  help: `usage:
  combo-platform operators invite <email> --role ROLE [--name NAME] [--games a,b]
                                        an account and its one-time invitation link (72 h)
  combo-platform operators list         every account, its role, games and status
  combo-platform operators update <operator_id> [--role ROLE] [--name NAME] [--games a,b|all] [--enable]
  combo-platform operators reinvite <operator_id>
                                        a new invitation link (also to reset a password)
  combo-platform operators disable <operator_id>
                                        its sessions end; the account and its audit trail stay

ROLE: viewer, support, developer, finance, admin, owner (docs/guides/operators.md).
The first owner is invited with ADMIN_TOKEN.

${ADMIN_OPTIONS_HELP}`,
  run: group({ invite, list, update, reinvite, disable }),
};

async function createKey(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, role: { type: 'string' }, games: { type: 'string' }, 'expires-days': { type: 'string' } });
  const [name] = positionals(pos, ['name']) as [string];
  const days = str(values, 'expires-days');
  if (days !== undefined && !/^[1-9]\d{0,4}$/.test(days)) throw new UsageError('--expires-days must be a whole number of days from 1');
  const body = defined({ name, role: required(values, 'role'), games: games(values), expires_at: days ? Date.now() + Number(days) * 86_400_000 : undefined });
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('POST', '/admin/v1/api-keys', body));
  if (values.json !== true) io.err('\nThe api_key above is shown only now (it is stored hashed): use it as --token or ADMIN_TOKEN, or Authorization: Bearer.\n');
  return 0;
}

async function listKeys(args: string[], io: Io): Promise<number> {
  const { values } = parse(args, ADMIN_OPTIONS);
  const body = await AdminClient.fromOptions(values, io).call('GET', '/admin/v1/api-keys');
  print(io, values.json === true, body, ['key_id', 'name', 'role', 'games', 'created_by', 'expires_at', 'last_used_at', 'revoked_at']);
  return 0;
}

async function revokeKey(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [keyId] = positionals(pos, ['key_id']) as [string];
  const body = await AdminClient.fromOptions(values, io).call('DELETE', `/admin/v1/api-keys/${encodeURIComponent(keyId)}`);
  if (values.json === true) print(io, true, body);
  else io.out(`revoked API key ${keyId}\n`);
  return 0;
}

export const apiKeysCommand: Command = {
  name: 'api-keys',
  summary: 'API keys for automation: create (shown once), list, revoke',
  help: `usage:
  combo-platform api-keys create <name> --role ROLE [--games a,b] [--expires-days N]
                                        a new key (ak_...), never above your own role
  combo-platform api-keys list          every key, with when it was last used
  combo-platform api-keys revoke <key_id>

${ADMIN_OPTIONS_HELP}`,
  run: group({ create: createKey, list: listKeys, revoke: revokeKey }),
};
