import { useState } from 'react';
import { NOTIFICATION_STATUSES, api, notificationType, recentGames, type Notification } from './api';
import { FilterCard, PagedTable, SelectFilter, TextFilter, useUrlFilters, usePaged } from './lists';
import { Link } from './router';
import { useCan } from './me';
import { Card, ConfirmButton, ErrorBox, Field, StatusBadge, time, useAction } from './ui';

/** "YYYY-MM-DDTHH:MM" (UTC) for a datetime-local input: the console shows all times in UTC. */
const toInput = (ms: number) => new Date(ms).toISOString().slice(0, 16);
const fromInput = (s: string) => Date.parse(`${s}:00Z`);

const TITLES: Record<string, string> = { failed: 'Failed notifications', failing: 'Failing notifications' };

/**
 * Notifications by status (failed by default): retry now for pending and failing ones (one, or
 * all failing ones of a game), redelivery for the others (one, or all failed since a time).
 */
export function NotificationsPage() {
  // An empty status (any) is kept in the URL: without one the page shows the failed ones.
  const filters = useUrlFilters('/notifications', { game_id: recentGames.current(), status: 'failed' }, { keepEmpty: true });
  const { game_id: gameId, status } = filters.applied;
  const list = usePaged((cursor) => api.notifications({ status: status || undefined, game_id: gameId || undefined, cursor }), [filters.key]);
  const can = useCan();
  return (
    <>
      <h1>{TITLES[status] ?? 'Notifications'}</h1>
      <FilterCard filters={filters}>
        <TextFilter filters={filters} name="game_id" label="Game id" />
        <SelectFilter filters={filters} name="status" label="Status" options={NOTIFICATION_STATUSES} />
      </FilterCard>
      {gameId && can('support') && (
        <Card title={`Retry the failing notifications of ${gameId}`}>
          <RetryFailing gameId={gameId} onDone={list.reload} />
        </Card>
      )}
      {gameId && can('support') && <BulkRedeliver gameId={gameId} onDone={list.reload} />}
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
  const can = useCan();
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
        {!can('support') ? null : BEING_DELIVERED.has(n.status) ? (
          <button
            disabled={action.busy}
            onClick={async () => {
              if ((await action.run(() => api.retry(n.notification_id))) !== undefined) onChanged();
            }}
          >
            Retry now
          </button>
        ) : (
          <ConfirmButton
            label="Redeliver"
            question="Redeliver?"
            disabled={action.busy}
            onConfirm={async () => {
              if ((await action.run(() => api.redeliver(n.notification_id))) !== undefined) onChanged();
            }}
          />
        )}
      </td>
    </tr>
  );
}

/** Statuses whose notification is still being delivered: retried now, not redelivered. */
export const BEING_DELIVERED = new Set(['pending', 'failing']);

/** Sends every failing notification of a game now (after its endpoint was fixed). */
export function RetryFailing({ gameId, onDone }: { gameId: string; onDone: () => void }) {
  const [result, setResult] = useState<number>();
  const action = useAction();
  const can = useCan();
  const run = async () => {
    const r = await action.run(() => api.retryFailing(gameId));
    if (r) {
      setResult(r.count);
      onDone();
    }
  };
  if (!can('support')) return null;
  return (
    <div className="row">
      <button disabled={action.busy} onClick={run}>
        Retry all failing now
      </button>
      {result !== undefined && (
        <span role="status" data-testid="retry-result">
          {result} failing notification{result === 1 ? '' : 's'} sent now.
        </span>
      )}
      <ErrorBox error={action.error} />
    </div>
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
