import { useState, type FormEvent } from 'react';
import { beijingDate } from '../../src/lib/beijing-time';
import { api, recentGames, type Reconciliation } from './api';
import { FilterCard, PagedTable, SelectFilter, TextFilter, useUrlFilters, usePaged } from './lists';
import { useCan } from './me';
import { PROVIDER_CHANNELS } from './ProviderChannels';
import { Link } from './router';
import { Card, ErrorBox, Field, StatusBadge, money, time, useAction } from './ui';
import './payments.css';

/**
 * Reconciliation (payments.md 6): each run compares a provider's statement of one Beijing day
 * (WeChat Pay's trade bill, Alipay's bill) with the stored payments. Runs come from here, the
 * CLI's `reconcile` and the scheduled daily check; each is listed with its differences.
 */
export function ReconciliationsPage() {
  const filters = useUrlFilters('/reconciliations', { game_id: recentGames.current(), channel: '' });
  const { applied } = filters;
  const list = usePaged(() => api.reconciliations({ game_id: applied.game_id || undefined, channel: applied.channel || undefined }), [filters.key]);
  const can = useCan();
  return (
    <>
      <h1>Reconciliation</h1>
      <FilterCard filters={filters}>
        <TextFilter filters={filters} name="game_id" label="Game id" />
        <SelectFilter filters={filters} name="channel" label="Channel" options={PROVIDER_CHANNELS} />
      </FilterCard>
      {can('finance') && <RunForm gameId={applied.game_id} onRan={list.reload} />}
      <PagedTable
        title="Runs (newest first)"
        list={list}
        testId="reconciliations-table"
        headers={['Run at', 'Game', 'Channel', 'Day (Beijing)', 'Result', 'Statement / recorded', 'By', 'Differences']}
        empty="No reconciliation runs."
        row={(r) => <RunRow key={r.reconciliation_id} r={r} />}
      />
    </>
  );
}

function RunRow({ r }: { r: Reconciliation }) {
  return (
    <tr data-testid="reconciliation-run">
      <td className="nowrap">{time(r.created_at)}</td>
      <td className="mono">{r.game_id}</td>
      <td>{r.channel}</td>
      <td className="nowrap">{r.date}</td>
      <td>
        <StatusBadge status={r.status} />
      </td>
      <td>{r.counts ? `${r.counts.statement} / ${r.counts.recorded}` : '—'}</td>
      <td className="mono small">{r.actor}</td>
      <td>{r.error ? <span className="error-text">{r.error}</span> : <Differences r={r} />}</td>
    </tr>
  );
}

const KIND_LABELS: Record<string, string> = {
  missing_payment: 'paid at the provider, no payment recorded',
  not_in_statement: 'recorded, not in the statement',
  amount_differs: 'amounts differ',
};

function Differences({ r }: { r: Reconciliation }) {
  if (r.differences.length === 0) return <span className="muted">none</span>;
  return (
    <table className="differences" data-testid="differences">
      <thead>
        <tr>
          <th>Difference</th>
          <th>Order</th>
          <th>Provider trade no.</th>
          <th className="right">Statement</th>
          <th className="right">Recorded</th>
          <th>Applied</th>
        </tr>
      </thead>
      <tbody>
        {r.differences.map((d, i) => (
          <tr key={i}>
            <td title={d.kind}>{KIND_LABELS[d.kind] ?? d.kind}</td>
            <td className="mono">
              <Link to={`/orders/${encodeURIComponent(d.order_id)}`}>{d.order_id}</Link>
            </td>
            <td className="mono">{d.provider_txn_id}</td>
            {/* Both channels take CNY only (payments.md 4). */}
            <td className="right">{d.statement_amount === undefined ? '' : money(d.statement_amount, 'CNY')}</td>
            <td className="right">{d.recorded_amount === undefined ? '' : money(d.recorded_amount, 'CNY')}</td>
            <td>{d.applied ?? ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** POST /admin/v1/reconciliations: one channel, game and past day (yesterday in Beijing by default). */
function RunForm({ gameId, onRan }: { gameId: string; onRan: () => void }) {
  const [form, setForm] = useState({ channel: 'wechat', game_id: gameId, date: beijingDate(Date.now() - 86_400_000) });
  const action = useAction();
  const [last, setLast] = useState<Reconciliation>();
  const run = async (e: FormEvent) => {
    e.preventDefault();
    const r = await action.run(() => api.runReconciliation({ ...form, game_id: form.game_id.trim() }));
    if (r) {
      setLast(r);
      onRan();
    }
  };
  return (
    <Card title="Run a reconciliation">
      <form className="filters" onSubmit={run}>
        <Field label="Channel to reconcile">
          <select name="run_channel" value={form.channel} onChange={(e) => setForm({ ...form, channel: e.target.value })}>
            {PROVIDER_CHANNELS.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </Field>
        <Field label="Game to reconcile">
          <input name="run_game_id" value={form.game_id} onChange={(e) => setForm({ ...form, game_id: e.target.value })} />
        </Field>
        <Field label="Day (Beijing)" hint="a past day">
          <input name="run_date" type="date" value={form.date} onChange={(e) => setForm({ ...form, date: e.target.value })} />
        </Field>
        <button type="submit" className="primary" disabled={action.busy || !form.game_id.trim() || !form.date}>
          {action.busy ? 'Reconciling…' : 'Reconcile'}
        </button>
      </form>
      <ErrorBox error={action.error} />
      {last && (
        <p className="muted" role="status" data-testid="reconcile-result">
          {last.channel} {last.game_id} {last.date}: {last.status}
          {last.error ? ` (${last.error})` : last.counts ? `, ${last.counts.differences} difference(s)` : ''}
        </p>
      )}
    </Card>
  );
}
