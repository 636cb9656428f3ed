import { useState, type FormEvent } from 'react';
import { api, type Channel } from './api';
import { FilterCard, PagedTable, SelectFilter, TextFilter, useUrlFilters, usePaged } from './lists';
import { PROVIDER_CHANNELS, PROVIDER_LABELS, useProviderForm } from './ProviderChannels';
import { useCan } from './me';
import { Link } from './router';
import { Card, ConfirmButton, ErrorBox, Field, Json, Switch, money, time, useAction, useLoad } from './ui';

const STANDARD = new Set(['game_id', 'channel', 'enabled', 'callback_url', 'created_at', 'updated_at']);
const settingsOf = (c: Channel) => Object.fromEntries(Object.entries(c).filter(([k]) => !STANDARD.has(k)));

/** A game's payment channels (payments.md 2): each with its callback_url for the provider's console. */
export function Channels({ gameId }: { gameId: string }) {
  const list = useLoad(() => api.channels(gameId), [gameId]);
  const action = useAction();
  const edits = useCan()('developer');
  const [channel, setChannel] = useState<string>('apple');
  const [apple, setApple] = useState({ enabled: true, bundle_id: '', app_apple_id: '', accept_sandbox: true });
  const [googleJson, setGoogleJson] = useState('{"enabled": true, "package_name": "", "service_account": {"client_email": "", "private_key": ""}}');
  const provider = useProviderForm(gameId, channel, list.data?.data.find((c) => c.channel === channel));
  const remove = async (c: string) => {
    if (await action.run(() => api.deleteChannel(gameId, c))) list.reload();
  };
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const body =
      provider.body() ??
      (channel === 'apple'
        ? { enabled: apple.enabled, bundle_id: apple.bundle_id.trim(), accept_sandbox: apple.accept_sandbox, ...(apple.app_apple_id.trim() ? { app_apple_id: Number(apple.app_apple_id) } : {}) }
        : (JSON.parse(googleJson) as Record<string, unknown>));
    if (await action.run(() => api.putChannel(gameId, channel, body))) {
      provider.reset();
      list.reload();
    }
  };
  return (
    <Card title="Payment channels" id="channels">
      <ErrorBox error={list.error} />
      {(list.data?.data ?? []).length === 0 && <p className="muted">No channel: players cannot pay. The sandbox switch above turns on test payments.</p>}
      <table data-testid="channels-table">
        <thead>
          <tr>
            <th>Channel</th>
            <th>Enabled</th>
            <th>Settings</th>
            <th>Callback URL (paste into the provider's console)</th>
            <th>Updated</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((c) => (
            <tr key={c.channel}>
              <td className="mono">{c.channel}</td>
              <td>{c.enabled ? 'yes' : 'no'}</td>
              <td className="mono small snippet">{JSON.stringify(settingsOf(c))}</td>
              <td className="mono small">{c.callback_url ?? '-'}</td>
              <td className="nowrap">{time(c.updated_at)}</td>
              <td className="right">
                {edits && <ConfirmButton label="Remove" question={`Remove the ${c.channel} channel? Players can no longer pay through it.`} onConfirm={() => void remove(c.channel)} danger />}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {edits && <h3>Set a channel</h3>}
      {edits && <form className="grid-form" onSubmit={save} noValidate>
        <Field label="Channel">
          <select name="channel" value={channel} onChange={(e) => setChannel(e.target.value)}>
            <option value="apple">apple (App Store)</option>
            <option value="google">google (Google Play)</option>
            {PROVIDER_CHANNELS.map((c) => (
              <option key={c} value={c}>{`${c} (${PROVIDER_LABELS[c]})`}</option>
            ))}
          </select>
        </Field>
        {provider.fields ?? (channel === 'apple' ? (
          <>
            <Field label="Bundle id">
              <input name="bundle_id" value={apple.bundle_id} placeholder="com.example.game" onChange={(e) => setApple({ ...apple, bundle_id: e.target.value })} />
            </Field>
            <Field label="App Apple ID" hint="App Store Connect, App Information; needed for Production purchases">
              <input name="app_apple_id" inputMode="numeric" value={apple.app_apple_id} onChange={(e) => setApple({ ...apple, app_apple_id: e.target.value })} />
            </Field>
            <Switch label="Accept App Store sandbox purchases" checked={apple.accept_sandbox} onChange={(v) => setApple({ ...apple, accept_sandbox: v })} />
            <Switch label="Enabled" checked={apple.enabled} onChange={(v) => setApple({ ...apple, enabled: v })} />
          </>
        ) : (
          <Field label="Settings (JSON)" hint="the private key is write-only: shown as *** afterwards">
            <textarea name="google_settings" rows={5} value={googleJson} onChange={(e) => setGoogleJson(e.target.value)} />
          </Field>
        ))}
        <ErrorBox error={action.error} />
        <button type="submit" className="primary" disabled={action.busy}>
          Save channel
        </button>
      </form>}
      {list.data?.raw !== undefined && <Json value={list.data.raw} label="Unrecognised answer" open />}
    </Card>
  );
}

/** GET /admin/v1/payments: flagged payments (money that moved but paid no order) to settle. */
export function PaymentsPage() {
  const filters = useUrlFilters('/payments', { status: 'flagged', game_id: '' });
  const { applied } = filters;
  const list = usePaged((cursor) => api.payments({ status: applied.status || undefined, game_id: applied.game_id || undefined, cursor }), [filters.key]);
  return (
    <>
      <h1>Payments</h1>
      <FilterCard filters={filters}>
        <SelectFilter filters={filters} name="status" label="Status" options={['flagged', 'accepted']} />
        <TextFilter filters={filters} name="game_id" label="Game" />
      </FilterCard>
      <PagedTable
        title="Payments (newest first)"
        list={list}
        testId="payments-table"
        headers={['At', 'Order', 'Game', 'Channel', 'Transaction', 'Environment', 'Store price', 'Status', 'Reason']}
        empty="No payments."
        row={(p) => (
          <tr key={p.payment_id}>
            <td className="nowrap">{time(p.created_at)}</td>
            <td className="mono">{p.order_id ? <Link to={`/orders/${encodeURIComponent(p.order_id)}`}>{p.order_id}</Link> : ''}</td>
            <td className="mono">{p.game_id ?? ''}</td>
            <td>{p.provider}</td>
            <td className="mono">{p.provider_txn_id}</td>
            <td>{p.environment ?? ''}</td>
            <td className="right">{p.store_amount === null || p.store_amount === undefined ? '' : money(p.store_amount, p.store_currency ?? undefined)}</td>
            <td>{p.status}</td>
            <td className="mono">{p.reason ?? ''}</td>
          </tr>
        )}
      />
    </>
  );
}
