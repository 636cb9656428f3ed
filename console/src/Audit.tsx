import { api } from './api';
import { FilterCard, PagedTable, TextFilter, useUrlFilters, usePaged } from './lists';
import { time } from './ui';

/** GET /admin/v1/audit: who changed what, from which address, newest first. */
export function AuditPage() {
  const filters = useUrlFilters('/audit', { action: '', target: '', actor: '' });
  const { applied } = filters;
  const list = usePaged(
    (cursor) => api.audit({ action: applied.action || undefined, target: applied.target || undefined, actor: applied.actor || undefined, cursor }),
    [filters.key],
  );
  return (
    <>
      <h1>Audit log</h1>
      <FilterCard filters={filters}>
        <TextFilter filters={filters} name="action" label="Action" hint="e.g. game.update" />
        <TextFilter filters={filters} name="target" label="Target" hint="exact, e.g. a game id" />
        <TextFilter filters={filters} name="actor" label="Actor" />
      </FilterCard>
      <PagedTable
        title="Changes (newest first)"
        list={list}
        testId="audit-table"
        headers={['At', 'Actor', 'Address', 'Action', 'Target', 'Detail']}
        empty="Nothing recorded."
        row={(a) => (
          <tr key={a.audit_id}>
            <td className="nowrap">{time(a.at)}</td>
            <td>{a.actor}</td>
            <td className="mono">{a.address ?? ''}</td>
            <td className="mono">{a.action}</td>
            <td className="mono">{a.target}</td>
            <td className="mono small snippet">{a.detail === undefined || a.detail === null ? '' : JSON.stringify(a.detail)}</td>
          </tr>
        )}
      />
    </>
  );
}
