import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { parse, positionals, str, UsageError, type Command, type Io } from './io.js';
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

export const reconcileCommand: Command = {
  name: 'reconcile',
  summary: "compare a channel's statement of a day with the stored payments (payments.md 6)",
  help: `usage:
  combo-platform reconcile --channel wechat|alipay --game G --date YYYY-MM-DD [--json]

  Downloads the provider's statement of that day (Beijing time; WeChat Pay's trade bill,
  Alipay's trade bill) and compares it with the game's payments: money received with no
  payment recorded (applied now, as a late callback), payments the provider does not list,
  amounts that differ. The result is stored (GET /admin/v1/reconciliations). Exit status 1 when the statement could not be had.

${ADMIN_OPTIONS_HELP}`,
  run: (args, io) => run(args, io),
};
