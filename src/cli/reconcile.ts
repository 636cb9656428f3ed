import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { int, parse, positionals, str, UsageError, type Command, type Io } from './io.js';
import { print } from './output.js';

const COLUMNS = ['kind', 'order_id', 'provider_txn_id', 'statement_amount', 'recorded_amount', 'applied'];

/** POST /admin/v1/reconciliations: one channel, game and day; prints the result and its differences. */
async function run(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, channel: { type: 'string' }, game: { type: 'string' }, date: { type: 'string' } });
  positionals(pos, []);
  const body = { channel: str(values, 'channel'), game_id: str(values, 'game'), date: str(values, 'date') };
  for (const [flag, v] of [['channel', body.channel], ['game', body.game_id], ['date', body.date]] as const) if (!v) throw new UsageError(`--${flag} is required`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(body.date!)) throw new UsageError('--date must be YYYY-MM-DD');
  const r = (await AdminClient.fromOptions(values, io).call('POST', '/admin/v1/reconciliations', body)) as { status: string; counts: unknown; differences: unknown[]; error: string | null };
  if (values.json === true) {
    print(io, true, r);
  } else {
    io.out(`${body.channel} ${body.game_id} ${body.date}: ${r.status}${r.error ? ` (${r.error})` : ''} ${JSON.stringify(r.counts)}\n`);
    if (r.differences.length) print(io, false, r.differences, COLUMNS);
  }
  return r.status === 'failed' ? 1 : 0;
}

type Run = { reconciliation_id: string; created_at: number; game_id: string; channel: string; date: string; status: string; counts: { statement: number; recorded: number; differences: number } | null; error: string | null };

/** GET /admin/v1/reconciliations: the stored runs, newest first, one line each (--json: the answer). */
async function list(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, channel: { type: 'string' }, game: { type: 'string' }, limit: { type: 'string' } });
  positionals(pos, []);
  const limit = int(values, 'limit');
  if (limit !== undefined && (limit < 1 || limit > 200)) throw new UsageError('--limit must be from 1 to 200');
  const q = new URLSearchParams(Object.entries({ game_id: str(values, 'game'), channel: str(values, 'channel'), limit: limit?.toString() }).filter((e): e is [string, string] => e[1] !== undefined));
  const body = (await AdminClient.fromOptions(values, io).call('GET', `/admin/v1/reconciliations${q.size ? `?${q}` : ''}`)) as { data: Run[] };
  if (values.json === true) {
    print(io, true, body);
    return 0;
  }
  const rows = body.data.map((r) => ({
    run_at: new Date(r.created_at).toISOString(),
    game_id: r.game_id,
    channel: r.channel,
    date: r.date,
    status: r.status,
    statement: r.counts?.statement ?? '-',
    recorded: r.counts?.recorded ?? '-',
    differences: r.counts?.differences ?? '-',
    reconciliation_id: r.reconciliation_id,
    error: r.error ?? '',
  }));
  print(io, false, rows, ['run_at', 'game_id', 'channel', 'date', 'status', 'statement', 'recorded', 'differences', 'reconciliation_id', 'error']);
  return 0;
}

export const reconcileCommand: Command = {
  name: 'reconcile',
  summary: "compare a channel's statement of a day with the stored payments (payments.md 6)",
  help: `usage:
  combo-platform reconcile --channel wechat|alipay --game G --date YYYY-MM-DD [--json]
  combo-platform reconcile list [--game G] [--channel C] [--limit N] [--json]

  Downloads the provider's statement of that day (Beijing time; WeChat Pay's trade bill,
  Alipay's trade bill) and compares it with the game's payments: money received with no
  payment recorded (applied now, as a late callback), payments the provider does not list,
  amounts that differ. The result is stored (GET /admin/v1/reconciliations). Exit status 1
  when the statement could not be had. list shows the stored runs (these, and the scheduled
  ones), newest first; --json with every run's differences.

${ADMIN_OPTIONS_HELP}`,
  run: (args, io) => (args[0] === 'list' ? list(args.slice(1), io) : run(args, io)),
};
