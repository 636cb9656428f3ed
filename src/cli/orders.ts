import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient, ApiFailure } from './client.js';
import { REFUND_HELP, refund } from './refund.js';
import { CommandError, group, int, parse, positionals, str, UsageError, type Command, type Io } from './io.js';

type Order = Record<string, unknown> & { order_id?: unknown; status?: unknown };

const COLUMNS: Array<[string, number]> = [
  ['created_at', 24],
  ['order_id', 20],
  ['status', 10],
  ['product_id', 16],
  ['amount', 10],
  ['currency', 8],
  ['combo_id', 16],
  ['reference_id', 0],
];

function cellOf(o: Order, key: string): string {
  const v = o[key];
  if (v === null || v === undefined) return '-';
  if (typeof v === 'number' && key.endsWith('_at') && v > 1e12) return new Date(v).toISOString();
  return String(v).replace(/\s/g, ' ');
}

const line = (cells: string[]) => cells.map((c, i) => c.padEnd(COLUMNS[i]?.[1] ?? 0)).join(' ').trimEnd() + '\n';

/** The orders of a list answer: `{data: [...]}` (PROTOCOL 11 lists), or a bare array. */
function ordersOf(body: unknown): Order[] {
  const list = Array.isArray(body) ? body : (body as { data?: unknown } | null)?.data;
  return Array.isArray(list) ? (list.filter((o) => o && typeof o === 'object') as Order[]) : [];
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Polls GET /admin/v1/orders?game_id=G (newest first) and prints each order the first time
 * it is seen and again whenever its status changes, oldest first, until Ctrl-C.
 */
async function tail(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, game: { type: 'string' }, status: { type: 'string' }, interval: { type: 'string' }, limit: { type: 'string' } });
  positionals(pos, []);
  const game = str(values, 'game');
  if (!game) throw new UsageError('--game is required');
  const interval = Number(str(values, 'interval') ?? '2');
  if (!Number.isFinite(interval) || interval < 0.1 || interval > 3600) throw new UsageError('--interval must be a number of seconds from 0.1 to 3600');
  const limit = int(values, 'limit') ?? 20;
  if (limit < 1 || limit > 100) throw new UsageError('--limit must be from 1 to 100');
  const client = AdminClient.fromOptions(values, io);
  const query = new URLSearchParams({ game_id: game, limit: String(limit), ...(str(values, 'status') ? { status: str(values, 'status') as string } : {}) });
  const json = values.json === true;

  let stop = false;
  const interrupted = io.interrupted().then(() => {
    stop = true;
  });
  // An unknown game lists nothing, for ever: said at once instead (a typo in --game).
  const known = await client.request('GET', `/admin/v1/games/${encodeURIComponent(game)}`);
  if (known.status === 404 && (known.body as { error?: string } | null)?.error === 'not_found') throw new CommandError(`no game "${game}"`);
  let seen = new Map<string, string>();
  let first = true;
  if (!json) io.out(line(COLUMNS.map(([c]) => c.toUpperCase())));
  while (!stop) {
    // After the first answer, a service that cannot be reached (restarting, a network blip) is
    // a transient error like a 5xx: reported, and polling goes on.
    const poll = client.request('GET', `/admin/v1/orders?${query}`).catch((e: unknown) => {
      if (first || !(e instanceof CommandError)) throw e;
      return e;
    });
    const answer = await Promise.race([poll, interrupted.then(() => null)]);
    if (answer === null) break;
    if (answer instanceof CommandError) {
      io.err(`warning: ${answer.message} while polling; retrying\n`);
      await Promise.race([sleep(interval * 1000), interrupted]);
      continue;
    }
    if (answer.status === 404 && first) {
      const msg = (answer.body as { message?: string } | null)?.message ?? '';
      throw new CommandError(
        /no endpoint/.test(msg)
          ? `${client.baseUrl} has no GET /admin/v1/orders: this service version has no orders admin API yet`
          : `HTTP 404 ${msg || answer.text.slice(0, 200)}`,
      );
    }
    if (answer.status < 200 || answer.status > 299) {
      if (first || answer.status === 401) throw new ApiFailure(answer);
      io.err(`warning: HTTP ${answer.status} while polling; retrying\n`);
    } else {
      const orders = ordersOf(answer.body);
      const next = new Map<string, string>();
      for (const o of [...orders].reverse()) {
        const id = String(o.order_id);
        const status = String(o.status);
        next.set(id, status);
        if (seen.get(id) === status) continue;
        io.out(json ? `${JSON.stringify(o)}\n` : line(COLUMNS.map(([c]) => cellOf(o, c))));
      }
      // Only the latest page is remembered: memory stays bounded however long the tail runs.
      seen = next;
      first = false;
    }
    await Promise.race([sleep(interval * 1000), interrupted]);
  }
  io.err('stopped\n');
  return 0;
}

export const ordersCommand: Command = {
  name: 'orders',
  summary: "follow a game's orders as they change state; refund one",
  help: `usage:
  combo-platform orders tail --game G [--status S] [--interval SEC] [--limit N] [--json]

  Prints the game's latest orders, then every new order and every status change, polling
  GET /admin/v1/orders every --interval seconds (default 2) until Ctrl-C. --limit is the page
  polled (default 20); more new orders than that between two polls are not all shown.
  --json prints one JSON object per line (NDJSON).

${REFUND_HELP}

${ADMIN_OPTIONS_HELP}`,
  run: group({ tail, refund }),
};
