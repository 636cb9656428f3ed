import { useState } from 'react';
import { NOTIFICATION_STATUSES, api, notificationType, recentGames, type Notification } from './api';
import { FilterCard, PagedTable, SelectFilter, TextFilter, useUrlFilters, usePaged } from './lists';
import { Link } from './router';
import { Card, ConfirmButton, ErrorBox, Field, StatusBadge, time, useAction } from './ui';

/** "YYYY-MM-DDTHH:MM" (UTC) for a datetime-local input: the console shows all times in UTC. */
const toInput = (ms: number) => new Date(ms).toISOString().slice(0, 16);
const fromInput = (s: string) => Date.parse(`${s}:00Z`);

/** Notifications that gave up (status=failed by default), with per-row and bulk redelivery. */
export function NotificationsPage() {
  // An empty status (any) is kept in the URL: without one the page shows the failed ones.
  const filters = useUrlFilters('/notifications', { game_id: recentGames.current(), status: 'failed' }, { keepEmpty: true });
  const { game_id: gameId, status } = filters.applied;
  const list = usePaged((cursor) => api.notifications({ status: status || undefined, game_id: gameId || undefined, cursor }), [filters.key]);
  return (
    <>
      <h1>{status === 'failed' ? 'Failed notifications' : 'Notifications'}</h1>
      <FilterCard filters={filters}>
        <TextFilter filters={filters} name="game_id" label="Game id" />
        <SelectFilter filters={filters} name="status" label="Status" options={NOTIFICATION_STATUSES} />
      </FilterCard>
      {gameId && <BulkRedeliver gameId={gameId} onDone={list.reload} />}
      <PagedTable
        title="Notifications (newest first)"
        list={list}
        testId="notifications-table"
        headers={['Notification', 'Type', 'Order', 'Game', 'Status', { label: 'Attempts', className: 'right' }, 'Last error', 'Created', '']}
        empty="Nothing here."
        row={(n) => <Row key={n.notification_id} n={n} onChanged={list.reload} />}
      />
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
