import { useState } from 'react';
import { api, recentGames, type SessionPage } from './api';
import { FilterCard, PagedTable, SelectFilter, TextFilter, useUrlFilters, usePaged } from './lists';
import { Card, time } from './ui';

const duration = (s: number | null | undefined) => {
  if (typeof s !== 'number') return '—';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h} h ${m} min` : `${m} min ${s % 60} s`;
};

export function SessionsPage() {
  const filters = useUrlFilters('/sessions', { game_id: recentGames.current(), combo_id: '', open: '' });
  const { applied } = filters;
  const [days, setDays] = useState<SessionPage['online_days']>();
  const list = usePaged(
    async (cursor) => {
      const page = await api.sessions({
        game_id: applied.game_id || undefined,
        combo_id: applied.combo_id || undefined,
        open: applied.open === '' ? undefined : applied.open === 'true',
        cursor,
      });
      if (!cursor) setDays(page.online_days);
      return page;
    },
    [filters.key],
  );
  return (
    <>
      <h1>Sessions</h1>
      <FilterCard filters={filters}>
        <TextFilter filters={filters} name="game_id" label="Game id" />
        <TextFilter filters={filters} name="combo_id" label="Combo id" />
        <SelectFilter filters={filters} name="open" label="Open" options={[['true', 'open'], ['false', 'closed']]} />
      </FilterCard>
      {days && days.length > 0 && (
        <Card title={`Online time of ${applied.combo_id} per Beijing day`}>
          <table>
            <tbody>
              {days.map((d) => (
                <tr key={d.date}>
                  <td>{d.date}</td>
                  <td className="right">{duration(d.online_seconds)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Card>
      )}
      <PagedTable
        title="Sessions (newest first)"
        list={list}
        testId="sessions-table"
        headers={['Session', 'Game', 'Combo id', 'Entered', 'Left', 'Closed by', { label: 'Online', className: 'right' }]}
        empty="No sessions match."
        row={(s) => (
          <tr key={`${s.game_id}/${s.session_id}`}>
            <td className="mono">{s.session_id}</td>
            <td className="mono">{s.game_id}</td>
            <td className="mono">{s.combo_id}</td>
            <td className="nowrap">{time(s.entered_at)}</td>
            <td>{s.open ? <span className="badge badge-paid">open</span> : time(s.left_at)}</td>
            <td>{s.close_reason ?? ''}</td>
            <td className="right">{duration(s.online_seconds)}</td>
          </tr>
        )}
      />
    </>
  );
}
