import { useState, type FormEvent } from 'react';
import { NOTIFICATION_STATUSES, api, notificationType, recentGames, type Notification } from './api';
import { Link, navigate, useRoute } from './router';
import { Card, ConfirmButton, ErrorBox, Field, Json, LoadMore, StatusBadge, time, useAction, usePaged } from './ui';

/** "YYYY-MM-DDTHH:MM" (UTC) for a datetime-local input: the console shows all times in UTC. */
const toInput = (ms: number) => new Date(ms).toISOString().slice(0, 16);
const fromInput = (s: string) => Date.parse(`${s}:00Z`);

/** Notifications that gave up (status=failed by default), with per-row and bulk redelivery. */
export function NotificationsPage() {
  const { query } = useRoute();
  const gameId = query.get('game_id') ?? recentGames.current();
  const status = query.get('status') ?? 'failed';
  const [form, setForm] = useState({ game_id: gameId, status });
  const list = usePaged((cursor) => api.notifications({ status: status || undefined, game_id: gameId || undefined, cursor }), [gameId, status]);
  const search = (e: FormEvent) => {
    e.preventDefault();
    if (form.game_id.trim()) recentGames.use(form.game_id.trim());
    navigate(`/notifications?${new URLSearchParams({ game_id: form.game_id.trim(), status: form.status }).toString()}`);
  };
  return (
    <>
      <h1>{status === 'failed' ? 'Failed notifications' : 'Notifications'}</h1>
      <Card title="Filter">
        <form className="filters" onSubmit={search}>
          <Field label="Game id">
            <input name="game_id" value={form.game_id} onChange={(e) => setForm({ ...form, game_id: e.target.value })} />
          </Field>
          <Field label="Status">
            <select name="status" value={form.status} onChange={(e) => setForm({ ...form, status: e.target.value })}>
              <option value="">any</option>
              {NOTIFICATION_STATUSES.map((s) => (
                <option key={s}>{s}</option>
              ))}
            </select>
          </Field>
          <button type="submit" className="primary">
            Search
          </button>
        </form>
      </Card>
      {gameId && <BulkRedeliver gameId={gameId} onDone={list.reload} />}
      <Card title="Notifications (newest first)" actions={<button onClick={list.reload}>Refresh</button>}>
        <ErrorBox error={list.error} />
        <table data-testid="notifications-table">
          <thead>
            <tr>
              <th>Notification</th>
              <th>Type</th>
              <th>Order</th>
              <th>Game</th>
              <th>Status</th>
              <th className="right">Attempts</th>
              <th>Last error</th>
              <th>Created</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {list.items.map((n) => (
              <Row key={n.notification_id} n={n} onChanged={list.reload} />
            ))}
            {!list.loading && list.items.length === 0 && !list.error && (
              <tr>
                <td colSpan={9} className="muted">
                  Nothing here.
                </td>
              </tr>
            )}
          </tbody>
        </table>
        {list.raw !== undefined && <Json value={list.raw} label="Unrecognised answer" open />}
        <LoadMore cursor={list.cursor} loading={list.loading} onMore={list.more} />
      </Card>
    </>
  );
}

function Row({ n, onChanged }: { n: Notification; onChanged: () => void }) {
  const action = useAction();
  return (
    <tr>
      <td className="mono">{n.notification_id}</td>
      <td>{notificationType(n)}</td>
      <td className="mono">{n.order_id ? <Link to={`/orders/${encodeURIComponent(n.order_id)}`}>{n.order_id}</Link> : '—'}</td>
      <td className="mono">{n.game_id}</td>
      <td>
        <StatusBadge status={n.status} />
      </td>
      <td className="right">{n.attempt_count ?? '—'}</td>
      <td className="small">
        {n.last_error ?? ''}
        <ErrorBox error={action.error} />
      </td>
      <td className="nowrap">{time(n.created_at)}</td>
      <td className="right">
        <ConfirmButton
          label="Redeliver"
          question="Redeliver?"
          disabled={action.busy}
          onConfirm={async () => {
            if ((await action.run(() => api.redeliver(n.notification_id))) !== undefined) onChanged();
          }}
        />
      </td>
    </tr>
  );
}

function BulkRedeliver({ gameId, onDone }: { gameId: string; onDone: () => void }) {
  const [since, setSince] = useState(() => toInput(Date.now() - 7 * 86_400_000));
  const [result, setResult] = useState<number>();
  const action = useAction();
  const run = async () => {
    const ms = fromInput(since);
    const r = await action.run(() => api.redeliverSince(gameId, ms));
    if (r) {
      setResult(r.count);
      onDone();
    }
  };
  return (
    <Card title={`Redeliver every failed notification of ${gameId}`}>
      <div className="row">
        <Field label="Created since (UTC)">
          <input name="since" type="datetime-local" value={since} onChange={(e) => (setSince(e.target.value), setResult(undefined))} />
        </Field>
        <ConfirmButton
          label="Redeliver all failed"
          question={`Redeliver all failed notifications of ${gameId} since ${since.replace('T', ' ')} UTC?`}
          disabled={action.busy || Number.isNaN(fromInput(since))}
          onConfirm={run}
        />
      </div>
      {result !== undefined && (
        <p role="status" data-testid="bulk-result">
          {result} notification{result === 1 ? '' : 's'} queued for redelivery.
        </p>
      )}
      <ErrorBox error={action.error} />
    </Card>
  );
}
