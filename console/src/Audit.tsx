import { useState, type FormEvent } from 'react';
import { api } from './api';
import { navigate, useRoute } from './router';
import { Card, ErrorBox, Field, Json, LoadMore, time, usePaged } from './ui';

/** GET /admin/v1/audit: who changed what, newest first. */
export function AuditPage() {
  const { query } = useRoute();
  const applied = { action: query.get('action') ?? '', target: query.get('target') ?? '', actor: query.get('actor') ?? '' };
  const [form, setForm] = useState(applied);
  const list = usePaged(
    (cursor) => api.audit({ action: applied.action || undefined, target: applied.target || undefined, actor: applied.actor || undefined, cursor }),
    [JSON.stringify(applied)],
  );
  const search = (e: FormEvent) => {
    e.preventDefault();
    const q = new URLSearchParams(Object.entries(form).filter(([, v]) => v.trim() !== '') as [string, string][]);
    navigate(`/audit?${q.toString()}`);
  };
  return (
    <>
      <h1>Audit log</h1>
      <Card title="Filter">
        <form className="filters" onSubmit={search}>
          <Field label="Action" hint="e.g. game.update">
            <input name="action" value={form.action} onChange={(e) => setForm({ ...form, action: e.target.value })} />
          </Field>
          <Field label="Target" hint="exact, e.g. a game id">
            <input name="target" value={form.target} onChange={(e) => setForm({ ...form, target: e.target.value })} />
          </Field>
          <Field label="Actor">
            <input name="actor" value={form.actor} onChange={(e) => setForm({ ...form, actor: e.target.value })} />
          </Field>
          <button type="submit" className="primary">
            Search
          </button>
        </form>
      </Card>
      <Card title="Changes (newest first)" actions={<button onClick={list.reload}>Refresh</button>}>
        <ErrorBox error={list.error} />
        <table data-testid="audit-table">
          <thead>
            <tr>
              <th>At</th>
              <th>Actor</th>
              <th>Action</th>
              <th>Target</th>
              <th>Detail</th>
            </tr>
          </thead>
          <tbody>
            {list.items.map((a) => (
              <tr key={a.audit_id}>
                <td className="nowrap">{time(a.at)}</td>
                <td>{a.actor}</td>
                <td className="mono">{a.action}</td>
                <td className="mono">{a.target}</td>
                <td className="mono small snippet">{a.detail === undefined || a.detail === null ? '' : JSON.stringify(a.detail)}</td>
              </tr>
            ))}
            {!list.loading && list.items.length === 0 && !list.error && (
              <tr>
                <td colSpan={5} className="muted">
                  Nothing recorded.
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
