import { ApiError, api, type Order } from './api';
import { FilterCard, TextFilter, useUrlFilters } from './lists';
import { OrderRow, ORDER_HEADERS } from './Orders';
import { Card, ErrorBox, useLoad } from './ui';

interface Found {
  order: Order;
  by: string;
}

const ORDER_ID = /^[0-9]{1,20}$/;

/** Orders of any game whose order id, reference id or player (combo id) is `q`. */
async function search(q: string): Promise<Found[]> {
  const byId = ORDER_ID.test(q)
    ? api.order(q).then(
        (o) => [{ order: o, by: 'order id' }],
        (e: unknown) => {
          if (e instanceof ApiError && e.status === 404) return [];
          throw e;
        },
      )
    : Promise.resolve([]);
  // The listing's filters hold at most 64 characters: a longer text matches nothing.
  const listed = (filter: 'reference_id' | 'combo_id', by: string) =>
    q.length > 64 ? Promise.resolve([]) : api.orders({ [filter]: q, limit: 50 }).then((p) => p.data.map((order) => ({ order, by })));
  const all = (await Promise.all([byId, listed('reference_id', 'reference id'), listed('combo_id', 'player')])).flat();
  return all.filter((f, i) => all.findIndex((g) => g.order.order_id === f.order.order_id) === i);
}

/** Search across games by order id, reference id or player; the text is kept in the URL. */
export function SearchPage() {
  const filters = useUrlFilters('/search', { q: '' });
  const q = filters.applied.q.trim();
  const found = useLoad(() => (q ? search(q) : Promise.resolve(undefined)), [q]);
  return (
    <>
      <h1>Search</h1>
      <FilterCard filters={filters}>
        <TextFilter filters={filters} name="q" label="Order id, reference id or player (combo id)" hint="in every game" />
      </FilterCard>
      <ErrorBox error={found.error} />
      {found.data && (
        <Card title={`${found.data.length} order${found.data.length === 1 ? '' : 's'} found (at most 50 per field)`}>
          <div className="table-box">
            <table data-testid="search-results">
              <thead>
                <tr>
                  {[...ORDER_HEADERS, 'Matched by'].map((h) => (
                    <th key={typeof h === 'string' ? h : h.label} className={typeof h === 'string' ? undefined : h.className}>
                      {typeof h === 'string' ? h : h.label}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {found.data.map((f) => (
                  <OrderRow key={f.order.order_id} o={f.order} extra={<td>{f.by}</td>} />
                ))}
                {found.data.length === 0 && (
                  <tr>
                    <td colSpan={ORDER_HEADERS.length + 1} className="muted">
                      No order of any game has this order id, reference id or player.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
        </Card>
      )}
    </>
  );
}
