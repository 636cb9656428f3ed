import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { bool, dataObject, defined, group, int, parse, positionals, str, UsageError, type Command, type Io } from './io.js';
import { print } from './output.js';

const productsPath = (gameId: string) => `/admin/v1/games/${encodeURIComponent(gameId)}/products`;
const COLUMNS = ['product_id', 'name', 'price', 'currency', 'active', 'updated_at'];

async function put(args: string[], io: Io): Promise<number> {
  const options = {
    ...ADMIN_OPTIONS,
    name: { type: 'string' },
    price: { type: 'string' },
    currency: { type: 'string' },
    active: { type: 'string' },
    'store-id-apple': { type: 'string' },
    'store-id-google': { type: 'string' },
    data: { type: 'string' },
  } as const;
  const { values, positionals: pos } = parse(args, options);
  const [gameId, productId] = positionals(pos, ['game_id', 'product_id']) as [string, string];
  const flags = defined({ name: str(values, 'name'), price: int(values, 'price'), currency: str(values, 'currency'), active: bool(values, 'active') });
  const data = await dataObject(values, io);
  const storeIds = defined({ apple: str(values, 'store-id-apple'), google: str(values, 'store-id-google') });
  const body: Record<string, unknown> = { ...data, ...flags };
  if (Object.keys(storeIds).length) body.store_product_ids = { ...(data.store_product_ids as object | undefined), ...storeIds };
  for (const f of ['name', 'price', 'currency']) if (body[f] === undefined) throw new UsageError(`--${f} is required`);
  const product = await AdminClient.fromOptions(values, io).call('PUT', `${productsPath(gameId)}/${encodeURIComponent(productId)}`, body);
  print(io, values.json === true, product);
  return 0;
}

async function get(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [gameId, productId] = positionals(pos, ['game_id', 'product_id']) as [string, string];
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('GET', `${productsPath(gameId)}/${encodeURIComponent(productId)}`));
  return 0;
}

async function list(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  const [gameId] = positionals(pos, ['game_id']) as [string];
  print(io, values.json === true, await AdminClient.fromOptions(values, io).call('GET', productsPath(gameId)), COLUMNS);
  return 0;
}

export const productsCommand: Command = {
  name: 'products',
  summary: "manage a game's products",
  help: `usage:
  combo-platform products put <game_id> <product_id> --name NAME --price MINOR_UNITS --currency CUR [--active BOOL]
                  [--store-id-apple ID] [--store-id-google ID]
  combo-platform products get <game_id> <product_id>
  combo-platform products list <game_id>

  --price is an integer in minor units (600 = 6.00 CNY); --currency is ISO 4217 (CNY, USD, ...).
  --store-id-apple, --store-id-google: the product's ids in the App Store and Google Play
  (store_product_ids); put replaces the product, so give them on every put.
  --data JSON adds other body fields (JSON, @file or - for stdin).

${ADMIN_OPTIONS_HELP}`,
  run: group({ put, get, list }),
};
