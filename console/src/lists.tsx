import { useCallback, useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { recentGames, type Page } from './api';
import { navigate, useRoute } from './router';
import { Card, ErrorBox, Field, Json } from './ui';

/**
 * The operator listings (orders, sessions, notifications, audit log, partners): a filter form
 * whose values live in the URL, and a cursor-paged table with Refresh and Load more. Every
 * listing answers `{data, next_cursor}` (docs/api.md, "Operator API").
 */

// ---------------------------------------------------------------- filters in the URL

export interface UrlFilters<K extends string> {
  /** The filters of the current URL (a missing one takes its default). */
  applied: Record<K, string>;
  /** `applied` as one string: a dependency that changes when any filter does. */
  key: string;
  /** The form being edited (applied on Search). */
  form: Record<K, string>;
  set: (name: K, value: string) => void;
  search: (e: FormEvent) => void;
}

/**
 * Filters kept in the URL (`path?game_id=..&status=..`) so a view can be shared and reloaded.
 * Search navigates to the form's values, trimmed; empty ones are left out unless `keepEmpty`
 * (where an empty value differs from the default, e.g. status "any" against "failed").
 * A game id searched for joins the recent games.
 */
export function useUrlFilters<K extends string>(path: string, defaults: Record<K, string>, opts: { keepEmpty?: boolean } = {}): UrlFilters<K> {
  const { query } = useRoute();
  const applied = Object.fromEntries(Object.entries(defaults).map(([k, d]) => [k, query.get(k) ?? d])) as Record<K, string>;
  const [form, setForm] = useState(applied);
  const search = (e: FormEvent) => {
    e.preventDefault();
    const values = Object.entries(form).map(([k, v]) => [k, (v as string).trim()] as [string, string]);
    const gameId = values.find(([k]) => k === 'game_id')?.[1];
    if (gameId) recentGames.use(gameId);
    const q = new URLSearchParams(opts.keepEmpty ? values : values.filter(([, v]) => v !== ''));
    navigate(`${path}?${q.toString()}`);
  };
  return { applied, key: JSON.stringify(applied), form, set: (name, value) => setForm((f) => ({ ...f, [name]: value })), search };
}

/** The "Filter" card: its fields, and a Search button that applies them. */
export function FilterCard({ filters, children }: { filters: { search: (e: FormEvent) => void }; children: ReactNode }) {
  return (
    <Card title="Filter">
      <form className="filters" onSubmit={filters.search}>
        {children}
        <button type="submit" className="primary">
          Search
        </button>
      </form>
    </Card>
  );
}

export function TextFilter<K extends string>(props: { filters: UrlFilters<K>; name: K; label: string; hint?: string }) {
  return (
    <Field label={props.label} hint={props.hint}>
      <input name={props.name} value={props.filters.form[props.name]} onChange={(e) => props.filters.set(props.name, e.target.value)} />
    </Field>
  );
}

/** A select whose first option, "any" (empty), does not filter; `options` are values or [value, label]. */
export function SelectFilter<K extends string>(props: { filters: UrlFilters<K>; name: K; label: string; options: readonly (string | readonly [string, string])[] }) {
  return (
    <Field label={props.label}>
      <select name={props.name} value={props.filters.form[props.name]} onChange={(e) => props.filters.set(props.name, e.target.value)}>
        <option value="">any</option>
        {props.options.map((o) => {
          const [value, label] = typeof o === 'string' ? [o, o] : o;
          return (
            <option key={value} value={value}>
              {label}
            </option>
          );
        })}
      </select>
    </Field>
  );
}

// ---------------------------------------------------------------- paged tables

function LoadMore(props: { cursor: string | null; loading: boolean; onMore: () => void }) {
  if (!props.cursor) return null;
  return (
    <div className="more">
      <button disabled={props.loading} onClick={props.onMore}>
        {props.loading ? 'Loading…' : 'Load more'}
      </button>
    </div>
  );
}


export interface Paged<T> {
  items: T[];
  cursor: string | null;
  raw: unknown;
  loading: boolean;
  error: Error | undefined;
  more: () => void;
  reload: () => void;
}

/** A cursor-paged list: the first page when `deps` change, the next ones on `more()`. */
export function usePaged<T>(fetchPage: (cursor?: string) => Promise<Page<T>>, deps: unknown[]): Paged<T> {
  const [items, setItems] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [raw, setRaw] = useState<unknown>();
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<Error>();
  const [tick, setTick] = useState(0);

  const load = useCallback(
    async (from: string | undefined, append: boolean, isLive: () => boolean = () => true) => {
      setLoading(true);
      try {
        const page = await fetchPage(from);
        if (!isLive()) return;
        setItems((old) => (append ? [...old, ...page.data] : page.data));
        setCursor(page.next_cursor);
        setRaw(page.raw);
        setError(undefined);
      } catch (e) {
        if (isLive()) setError(e as Error);
      } finally {
        if (isLive()) setLoading(false);
      }
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    deps,
  );

  useEffect(() => {
    let live = true;
    void load(undefined, false, () => live);
    return () => {
      live = false;
    };
  }, [load, tick]);

  return {
    items,
    cursor,
    raw,
    loading,
    error,
    more: () => cursor && void load(cursor, true),
    reload: () => setTick((t) => t + 1),
  };
}

/** A header cell: its text, or the text and a class (e.g. `right` for numbers). */
export type Header = string | { label: string; className?: string };

/**
 * A listing's card: the table of the items loaded so far (one `row` each, which renders its
 * own `<tr key=..>`), the list's error, a line saying `empty` when nothing matched, the raw
 * answer when it was not a recognised page, Refresh and Load more.
 */
export function PagedTable<T>(props: { title: ReactNode; list: Paged<T>; headers: Header[]; row: (item: T) => ReactNode; empty: string; testId?: string }) {
  const { list } = props;
  return (
    <Card title={props.title} actions={<button onClick={list.reload}>Refresh</button>}>
      <ErrorBox error={list.error} />
      <div className="table-box">
        <table data-testid={props.testId}>
          <thead>
            <tr>
              {props.headers.map((h, i) => {
                const { label, className } = typeof h === 'string' ? { label: h, className: undefined } : h;
                return (
                  <th key={i} className={className}>
                    {label}
                  </th>
                );
              })}
            </tr>
          </thead>
          <tbody>
            {list.items.map(props.row)}
            {!list.loading && list.items.length === 0 && !list.error && (
              <tr>
                <td colSpan={props.headers.length} className="muted">
                  {props.empty}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {list.raw !== undefined && <Json value={list.raw} label="Unrecognised answer" open />}
      <LoadMore cursor={list.cursor} loading={list.loading} onMore={list.more} />
    </Card>
  );
}
