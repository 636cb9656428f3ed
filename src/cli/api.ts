import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient, ApiFailure } from './client.js';
import { parse, parseJson, positionals, readData, str, UsageError, type Command, type Io } from './io.js';
import { print } from './output.js';

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Any operator endpoint, including ones this CLI has no command for yet: the answer is
 * printed as a table (or --json), a non-2xx answer exits 1.
 */
async function run(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, data: { type: 'string', short: 'd' } });
  const [rawMethod, path] = positionals(pos, ['METHOD', 'path']) as [string, string];
  const method = rawMethod.toUpperCase();
  if (!METHODS.has(method)) throw new UsageError(`METHOD must be one of ${[...METHODS].join(', ')} (got "${rawMethod}")`);
  const spec = str(values, 'data');
  let body: string | undefined;
  if (spec !== undefined) {
    body = await readData(spec, io);
    parseJson(body, '--data');
  } else if (method === 'POST' || method === 'PUT' || method === 'PATCH') body = '{}';
  const client = AdminClient.fromOptions(values, io);
  const answer = await client.request(method, path, body);
  if (answer.status < 200 || answer.status > 299) throw new ApiFailure(answer);
  print(io, values.json === true, answer.body);
  return 0;
}

export const apiCommand: Command = {
  name: 'api',
  summary: 'call any admin endpoint: api <METHOD> <path> [--data JSON]',
  help: `usage:
  combo-platform api <METHOD> <path> [--data JSON|@file|-]

  Calls any operator endpoint with the admin token, e.g.
    combo-platform api GET '/admin/v1/orders?game_id=demo&limit=10'
    combo-platform api PATCH /admin/v1/games/demo --data '{"iap_enabled":false}'
  POST/PUT/PATCH without --data send {}. The list of endpoints: GET /openapi.json or /docs.

${ADMIN_OPTIONS_HELP}`,
  run,
};
