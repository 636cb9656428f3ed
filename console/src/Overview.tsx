import { useState, type ReactNode } from 'react';
import { ApiError, api, recentGames, type DeliveryHealth, type DeliveryRate, type Notification, type Order, type Page } from './api';
import { GamePicker } from './GamePicker';
import { RetryFailing } from './Notifications';
import { Link, navigate, useRoute } from './router';
import { Card, ErrorBox, money, time, useLoad } from './ui';

const HOUR = 3_600_000;
const WINDOW = 24 * HOUR;
const MAX_PAGES = 20; // at most 4000 rows of each list: the overview stays cheap for the service

/** Pages through a newest-first list until rows are older than `since` (or the page cap). */
async function collect<T extends { created_at: number }>(fetchPage: (cursor?: string) => Promise<Page<T>>, since: number) {
  const rows: T[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < MAX_PAGES; i++) {
    const page = await fetchPage(cursor);
    rows.push(...page.data.filter((r) => r.created_at >= since));
    const oldest = page.data[page.data.length - 1];
    if (!page.next_cursor || !oldest || oldest.created_at < since) return { rows, truncated: false };
    cursor = page.next_cursor;
  }
  return { rows, truncated: true };
}

interface Stats {
  from: number;
  hours: { start: number; orders: number; paid: number; revenue: number }[];
  currency: string;
  orders: number;
  paid: number;
  revenue: Record<string, number>;
  sandboxRevenue: Record<string, number>;
  delivered: number;
  finished: number;
  /** Undelivered notifications of the game, from its delivery health (not capped by paging). */
  health?: DeliveryHealth;
  truncated: boolean;
  ordersError?: Error;
  notificationsError?: Error;
}

// Refunded orders are paid back: not revenue (they are counted apart).
const PAID = new Set(['paid', 'delivered']);

async function overview(gameId: string, now: number): Promise<Stats> {
  const from = Math.floor(now / HOUR) * HOUR - WINDOW + HOUR; // 24 hours, the last one still running
  const [[orders, ordersError], [notes, notificationsError]] = await Promise.all([
    settle(collect<Order>((cursor) => api.orders({ game_id: gameId, limit: 200, cursor }), from)),
    settle(
      // The window's notifications for the success rate; the delivery health counts every
      // undelivered one of the game, however old (one fails only after its 7-day retry window).
      Promise.all([collect<Notification>((cursor) => api.notifications({ game_id: gameId, limit: 200, cursor }), from), api.deliveryHealth(gameId)]),
    ),
  ]);
  const [all, health] = notes ?? [NONE, undefined];
  return summarise(from, orders ?? NONE, all, health, ordersError, notificationsError);
}

const NONE = { rows: [], truncated: false };
type Rows<T> = { rows: T[]; truncated: boolean };

/** One list failing (say, an endpoint this service version lacks) leaves the others on show. */
async function settle<T>(p: Promise<T>): Promise<[T | undefined, Error | undefined]> {
  try {
    return [await p, undefined];
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) throw e;
    return [undefined, e as Error];
  }
}

function summarise(
  from: number,
  orders: Rows<Order>,
  notes: Rows<Notification>,
  health: DeliveryHealth | undefined,
  ordersError: Error | undefined,
  notificationsError: Error | undefined,
): Stats {
  const hours = Array.from({ length: 24 }, (_, i) => ({ start: from + i * HOUR, orders: 0, paid: 0, revenue: 0 }));
  const revenue: Record<string, number> = {};
  const sandboxRevenue: Record<string, number> = {};
  // The chart shows the currency most orders use; the totals list every currency.
  const byCurrency = new Map<string, number>();
  for (const o of orders.rows) byCurrency.set(o.currency, (byCurrency.get(o.currency) ?? 0) + 1);
  const currency = [...byCurrency.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? 'CNY';
  let paid = 0;
  for (const o of orders.rows) {
    const h = hours[Math.floor((o.created_at - from) / HOUR)];
    if (h) h.orders++;
    if (!PAID.has(o.status)) continue;
    paid++;
    const into = o.is_sandbox ? sandboxRevenue : revenue;
    into[o.currency] = (into[o.currency] ?? 0) + o.amount;
    if (h) {
      h.paid++;
      if (o.currency === currency && !o.is_sandbox) h.revenue += o.amount;
    }
  }
  // Of the window's notifications, those delivered against those attempted (failing ones
  // included): an endpoint answering 500 all day shows as such.
  const delivered = notes.rows.filter((n) => n.status === 'succeeded').length;
  const finished = notes.rows.filter((n) => n.status !== 'pending').length;
  return {
    from,
    hours,
    currency,
    orders: orders.rows.length,
    paid,
    revenue,
    sandboxRevenue,
    delivered,
    finished,
    health,
    truncated: orders.truncated || notes.truncated,
    ordersError,
    notificationsError,
  };
}

export function Overview() {
  const { query } = useRoute();
  const gameId = query.get('game_id') ?? recentGames.current();
  const [now, setNow] = useState(() => Date.now());
  const stats = useLoad(() => (gameId ? overview(gameId, now) : Promise.resolve(undefined)), [gameId, now]);
  return (
    <>
      <h1>Overview {gameId && <span className="muted mono">{gameId}</span>}</h1>
      <Card title="Game" actions={gameId && <button onClick={() => setNow(Date.now())}>Refresh</button>}>
        <GamePicker gameId={gameId} onPick={(id) => navigate(`/?game_id=${encodeURIComponent(id)}`)} />
        {gameId && <Link to={`/games/${encodeURIComponent(gameId)}`}>Game settings</Link>}
        {!gameId && <p className="muted">Choose a game to see its last 24 hours.</p>}
      </Card>
      <ErrorBox error={stats.error} />
      {stats.loading && gameId && !stats.data && <p className="muted">Loading…</p>}
      {stats.data && <StatsView s={stats.data} gameId={gameId} onRetried={() => setNow(Date.now())} />}
    </>
  );
}

function StatsView({ s, gameId, onRetried }: { s: Stats; gameId: string; onRetried: () => void }) {
  const rate = s.finished ? `${((100 * s.delivered) / s.finished).toFixed(1)} %` : '—';
  const totals = (r: Record<string, number>) =>
    Object.keys(r).length
      ? Object.entries(r)
          .map(([c, v]) => money(v, c))
          .join(' · ')
      : '0';
  return (
    <>
      <div className="tiles" data-testid="overview-tiles">
        <Tile label="Orders (24 h)" value={String(s.orders)} />
        <Tile label="Paid orders" value={String(s.paid)} />
        <Tile label="Revenue" value={totals(s.revenue)} note={Object.keys(s.sandboxRevenue).length ? `sandbox: ${totals(s.sandboxRevenue)}` : 'sandbox excluded'} />
        <Tile label="Delivery success" value={rate} note={`${s.delivered} of ${s.finished} notifications attempted`} />
        {s.health && <UndeliveredTiles health={s.health} gameId={gameId} />}
      </div>
      {s.truncated && <p className="muted small">Busy game: only the newest rows were counted.</p>}
      {s.ordersError && (
        <div className="error" role="alert">
          Orders could not be read: {s.ordersError.message}
        </div>
      )}
      {s.notificationsError && (
        <div className="error" role="alert">
          Notifications could not be read: {s.notificationsError.message}
        </div>
      )}
      {s.health && <HealthCard health={s.health} gameId={gameId} onRetried={onRetried} />}
      <Card title="Orders per hour (UTC)">
        <Bars values={s.hours.map((h) => h.orders)} labels={s.hours.map((h) => h.start)} format={(v) => String(v)} />
      </Card>
      <Card title={`Revenue per hour (${s.currency}, sandbox excluded)`}>
        <Bars values={s.hours.map((h) => h.revenue)} labels={s.hours.map((h) => h.start)} format={(v) => money(v, s.currency)} />
      </Card>
    </>
  );
}

/** Undelivered notifications of every host, as the delivery health counts them. */
function UndeliveredTiles({ health, gameId }: { health: DeliveryHealth; gameId: string }) {
  const sum = (k: 'pending' | 'failing' | 'failed') => health.hosts.reduce((n, h) => n + h.undelivered[k], 0);
  const see = (status: string) => <Link to={`/notifications?game_id=${encodeURIComponent(gameId)}&status=${status}`}>see {status}</Link>;
  return (
    <>
      <Tile label="Backlog" value={String(sum('pending'))} note="notifications not attempted yet" />
      <Tile label="Failing" value={String(sum('failing'))} note={see('failing')} />
      <Tile label="Failed" value={String(sum('failed'))} note={see('failed')} />
    </>
  );
}

const rate = (r: DeliveryRate) => (r.success_rate === null ? '—' : `${(100 * r.success_rate).toFixed(1)} % of ${r.attempts}`);

/** Per notify host: success rates, undelivered counts, the oldest undelivered, the last error. */
function HealthCard({ health, gameId, onRetried }: { health: DeliveryHealth; gameId: string; onRetried: () => void }) {
  return (
    <Card title="Delivery health per notify host" id="delivery-health">
      <RetryFailing gameId={gameId} onDone={onRetried} />
      <div className="table-box">
        <table data-testid="delivery-health">
          <thead>
            <tr>
              <th>Host</th>
              <th className="right">Last hour</th>
              <th className="right">Last day</th>
              <th className="right">Pending</th>
              <th className="right">Failing</th>
              <th className="right">Failed</th>
              <th>Oldest undelivered</th>
              <th>Last error</th>
            </tr>
          </thead>
          <tbody>
            {health.hosts.map((h) => (
              <tr key={h.host}>
                <td className="mono">{h.host}</td>
                <td className="right nowrap">{rate(h.last_hour)}</td>
                <td className="right nowrap">{rate(h.last_day)}</td>
                <td className="right">{h.undelivered.pending}</td>
                <td className="right">{h.undelivered.failing}</td>
                <td className="right">{h.undelivered.failed}</td>
                <td className="nowrap">{h.oldest_undelivered ? time(h.oldest_undelivered.created_at) : '—'}</td>
                <td className="small">{h.last_error ? `${time(h.last_error.at)}: ${h.last_error.error ?? `HTTP ${h.last_error.status_code}`}` : '—'}</td>
              </tr>
            ))}
            {health.hosts.length === 0 && (
              <tr>
                <td colSpan={8} className="muted">
                  No attempts in the last day and nothing undelivered.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Card>
  );
}

function Tile(props: { label: string; value: string; note?: ReactNode }) {
  return (
    <div className="tile">
      <div className="tile-label">{props.label}</div>
      <div className="tile-value">{props.value}</div>
      {props.note && <div className="tile-note">{props.note}</div>}
    </div>
  );
}

/** A bar chart in SVG attributes (no inline styles: the console's CSP forbids them). */
function Bars({ values, labels, format }: { values: number[]; labels: number[]; format: (v: number) => string }) {
  const max = Math.max(1, ...values);
  const w = 24;
  const h = 120;
  return (
    <svg className="bars" viewBox={`0 0 ${values.length * w} ${h + 18}`} role="img" aria-label="per hour">
      <line x1={0} x2={values.length * w} y1={h + 0.5} y2={h + 0.5} className="base" />
      {values.map((v, i) => {
        const bh = Math.round((v / max) * h);
        return (
          <g key={i}>
            <title>{`${new Date(labels[i] ?? 0).toISOString().slice(11, 16)} UTC: ${format(v)}`}</title>
            <rect x={i * w + 3} y={h - bh} width={w - 6} height={Math.max(bh, v > 0 ? 1 : 0)} className="bar" />
            {i % 3 === 0 && (
              <text x={i * w + w / 2} y={h + 14} className="axis">
                {new Date(labels[i] ?? 0).toISOString().slice(11, 13)}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}
