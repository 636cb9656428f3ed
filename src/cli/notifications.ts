import { ADMIN_OPTIONS, ADMIN_OPTIONS_HELP, AdminClient } from './client.js';
import { group, parse, str, UsageError, type Command, type Io } from './io.js';
import { print, table } from './output.js';

interface Rate {
  attempts: number;
  succeeded: number;
  success_rate: number | null;
}

interface HostHealth {
  host: string;
  last_hour: Rate;
  last_day: Rate;
  last_error: { at: number; status_code: number | null; error: string | null } | null;
  undelivered: { pending: number; failing: number; failed: number };
  oldest_undelivered: { notification_id: string; created_at: number } | null;
}

/** `retry <notification_id>`, or `retry --game G` for every failing one of a game. */
async function retry(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, { ...ADMIN_OPTIONS, game: { type: 'string' } });
  const game = str(values, 'game');
  if (game === undefined ? pos.length !== 1 : pos.length !== 0) throw new UsageError('give one notification id, or --game G for all of its failing notifications');
  const client = AdminClient.fromOptions(values, io);
  if (game !== undefined) {
    const r = (await client.call('POST', `/admin/v1/games/${encodeURIComponent(game)}/notifications/retry`, {})) as { count: number };
    if (values.json === true) print(io, true, r);
    else io.out(`${r.count} failing notification(s) of ${game} sent now\n`);
    return 0;
  }
  const id = pos[0] as string;
  const n = (await client.call('POST', `/admin/v1/notifications/${encodeURIComponent(id)}/retry`, {})) as Record<string, unknown>;
  const { attempts: _attempts, body: _body, ...shown } = n;
  print(io, values.json === true, values.json === true ? n : shown);
  return 0;
}

const percent = (r: Rate) => (r.success_rate === null ? '-' : `${(100 * r.success_rate).toFixed(1)}% of ${r.attempts}`);

/** `health <game_id>`: one line per notify host. */
async function health(args: string[], io: Io): Promise<number> {
  const { values, positionals: pos } = parse(args, ADMIN_OPTIONS);
  if (pos.length !== 1) throw new UsageError('give one game id');
  const body = (await AdminClient.fromOptions(values, io).call('GET', `/admin/v1/games/${encodeURIComponent(pos[0] as string)}/delivery-health`)) as { hosts: HostHealth[] };
  if (values.json === true) {
    print(io, true, body);
    return 0;
  }
  const rows = body.hosts.map((h) => ({
    host: h.host,
    last_hour: percent(h.last_hour),
    last_day: percent(h.last_day),
    pending: h.undelivered.pending,
    failing: h.undelivered.failing,
    failed: h.undelivered.failed,
    oldest_undelivered_at: h.oldest_undelivered?.created_at ?? null,
    last_error: h.last_error ? (h.last_error.error ?? `HTTP ${h.last_error.status_code}`) : null,
  }));
  io.out(rows.length ? table(rows) : 'no attempts in the last day and nothing undelivered\n');
  return 0;
}

export const notificationsCommand: Command = {
  name: 'notifications',
  summary: 'delivery health per notify host; send pending or failing notifications now',
  help: `usage:
  combo-platform notifications health <game_id>         per notify host: success rate over the last hour
                                                        and day, undelivered (pending/failing/failed),
                                                        the oldest undelivered, the last error
  combo-platform notifications retry <notification_id>  send a pending or failing notification now
  combo-platform notifications retry --game G           send every failing notification of game G now

  A retry keeps the notification's attempts and retry window; a failed, gone or succeeded one is
  sent again with redeliver (POST /admin/v1/notifications/:id/redeliver, see docs/api.md).

${ADMIN_OPTIONS_HELP}`,
  run: group({ health, retry }),
};
