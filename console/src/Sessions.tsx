import { useState, type FormEvent } from 'react';
import { api, recentGames, type SessionPage } from './api';
import { navigate, useRoute } from './router';
import { Card, ErrorBox, Field, Json, LoadMore, time, usePaged } from './ui';

const duration = (s: number | null | undefined) => {
  if (typeof s !== 'number') return '—';
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h} h ${m} min` : `${m} min ${s % 60} s`;
};

export function SessionsPage() {
  const { query } = useRoute();
  const applied = {
    game_id: query.get('game_id') ?? recentGames.current(),
    combo_id: query.get('combo_id') ?? '',
    open: query.get('open') ?? '',
  };
  const [form, setForm] = useState(applied);
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
    [JSON.stringify(applied)],
  );
  const search = (e: FormEvent) => {
    e.preventDefault();
    if (form.game_id.trim()) recentGames.use(form.game_id.trim());
    const q = new URLSearchParams(Object.entries(form).filter(([, v]) => v.trim() !== '') as [string, string][]);
    navigate(`/sessions?${q.toString()}`);
  };
  return (
    <>
      <h1>Sessions</h1>
      <Card title="Filter">
        <form className="filters" onSubmit={search}>
          <Field label="Game id">
            <input name="game_id" value={form.game_id} onChange={(e) => setForm({ ...form, game_id: e.target.value })} />
          </Field>
          <Field label="Combo id">
            <input name="combo_id" value={form.combo_id} onChange={(e) => setForm({ ...form, combo_id: e.target.value })} />
          </Field>
          <Field label="Open">
            <select name="open" value={form.open} onChange={(e) => setForm({ ...form, open: e.target.value })}>
              <option value="">any</option>
              <option value="true">open</option>
              <option value="false">closed</option>
            </select>
          </Field>
          <button type="submit" className="primary">
            Search
          </button>
        </form>
      </Card>
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
      <Card title="Sessions (newest first)" actions={<button onClick={list.reload}>Refresh</button>}>
        <ErrorBox error={list.error} />
        <table data-testid="sessions-table">
          <thead>
            <tr>
              <th>Session</th>
              <th>Game</th>
              <th>Combo id</th>
              <th>Entered</th>
              <th>Left</th>
              <th>Closed by</th>
              <th className="right">Online</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((s) => (
              <tr key={`${s.game_id}/${s.session_id}`}>
                <td className="mono">{s.session_id}</td>
                <td className="mono">{s.game_id}</td>
                <td className="mono">{s.combo_id}</td>
                <td className="nowrap">{time(s.entered_at)}</td>
                <td>{s.open ? <span className="badge badge-paid">open</span> : time(s.left_at)}</td>
                <td>{s.close_reason ?? ''}</td>
                <td className="right">{duration(s.online_seconds)}</td>
              </tr>
            ))}
            {!list.loading && list.items.length === 0 && !list.error && (
              <tr>
                <td colSpan={7} className="muted">
                  No sessions match.
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
