import { Channels } from './Channels';
import { useEffect, useState, type FormEvent } from 'react';
import { api, recentGames, type Game, type GamePatch, type NewSecret, type Product } from './api';
import { PagedTable, usePaged } from './lists';
import { Link, navigate } from './router';
import { useCan } from './me';
import { Card, ConfirmButton, ErrorBox, Field, Json, SecretOnce, Switch, money, time, useAction, useLoad, Unloaded } from './ui';

/** Every game, page by page in id order; with many games, open one by id (recent ids are remembered). */
export function Games() {
  const [id, setId] = useState('');
  const [recent, setRecent] = useState(recentGames.list());
  const all = usePaged((cursor) => api.games(cursor), []);
  const can = useCan();
  const open = (e: FormEvent) => {
    e.preventDefault();
    if (id.trim()) navigate(`/games/${encodeURIComponent(id.trim())}`);
  };
  return (
    <>
      <h1>Games</h1>
      <Card title="Open a game">
        <form className="row" onSubmit={open}>
          <input name="game_id" placeholder="game id" value={id} onChange={(e) => setId(e.target.value)} aria-label="Game id" />
          <button type="submit" className="primary" disabled={!id.trim()}>
            Open
          </button>
        </form>
        {recent.length > 0 && (
          <>
            <h3>Recently used</h3>
            <ul className="plain" data-testid="recent-games">
              {recent.map((g) => (
                <li key={g}>
                  <Link to={`/games/${encodeURIComponent(g)}`}>{g}</Link>{' '}
                  <button
                    className="link"
                    onClick={() => {
                      recentGames.forget(g);
                      setRecent(recentGames.list());
                    }}
                  >
                    forget
                  </button>
                </li>
              ))}
            </ul>
          </>
        )}
      </Card>
      <PagedTable
        title="All games"
        list={all}
        testId="games-table"
        headers={['Game id', 'Name', 'IAP', 'Sandbox', 'Keys', 'Created']}
        empty="No games yet."
        row={(g) => (
          <tr key={g.game_id}>
            <td className="mono">
              <Link to={`/games/${encodeURIComponent(g.game_id)}`}>{g.game_id}</Link>
            </td>
            <td>{g.name}</td>
            <td>{g.iap_enabled ? 'on' : 'off'}</td>
            <td>{g.sandbox_payments ? 'on' : 'off'}</td>
            <td>{g.key_ids.length}</td>
            <td className="nowrap">{time(g.created_at)}</td>
          </tr>
        )}
      />
      {can('admin', true) && <CreateGame onCreated={all.reload} />}
    </>
  );
}

function CreateGame({ onCreated }: { onCreated: () => void }) {
  const [gameId, setGameId] = useState('');
  const [name, setName] = useState('');
  const [created, setCreated] = useState<NewSecret & { game_id: string }>();
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const g = await action.run(() => api.createGame({ game_id: gameId.trim(), name: name.trim() }));
    if (g) {
      recentGames.use(g.game_id);
      setCreated({ game_id: g.game_id, key_id: g.key_id, secret_key: g.secret_key });
      onCreated();
      setGameId('');
      setName('');
    }
  };
  return (
    <Card title="Create a game">
      {created ? (
        <SecretOnce secret={created} onDone={() => navigate(`/games/${encodeURIComponent(created.game_id)}`)} />
      ) : (
        <form className="grid-form" onSubmit={submit}>
          <Field label="New game id">
            <input name="new_game_id" value={gameId} onChange={(e) => setGameId(e.target.value)} />
          </Field>
          <Field label="New game name">
            <input name="new_game_name" value={name} onChange={(e) => setName(e.target.value)} />
          </Field>
          <ErrorBox error={action.error} />
          <button type="submit" className="primary" disabled={!gameId.trim() || !name.trim() || action.busy}>
            Create game
          </button>
        </form>
      )}
    </Card>
  );
}

export function GameDetail({ gameId }: { gameId: string }) {
  const game = useLoad(() => api.game(gameId), [gameId]);
  useEffect(() => {
    if (game.data) recentGames.use(game.data.game_id);
  }, [game.data]);
  if (!game.data) return <Unloaded loaded={game} title={`Game ${gameId}`} back={{ to: '/games', label: 'Back to games' }} />;
  const g = game.data;
  const q = `?game_id=${encodeURIComponent(g.game_id)}`;
  return (
    <>
      <h1>
        {g.name} <span className="muted mono">{g.game_id}</span>
      </h1>
      <p className="row">
        <Link to={`/orders${q}`}>Orders</Link>
        <Link to={`/notifications${q}`}>Failed notifications</Link>
        <Link to={`/sessions${q}`}>Sessions</Link>
      </p>
      <Settings game={g} onSaved={game.set} />
      <Keys game={g} onChanged={game.reload} />
      <Products gameId={g.game_id} />
      <Channels key={g.updated_at} gameId={g.game_id} />
      <Json value={g} label="Game (raw JSON)" />
    </>
  );
}

function Settings({ game, onSaved }: { game: Game; onSaved: (g: Game) => void }) {
  const action = useAction();
  const [ttl, setTtl] = useState(String(game.order_ttl_seconds));
  const [gmUrl, setGmUrl] = useState(game.gm_url ?? '');
  const [rate, setRate] = useState(String(game.rate_limit_per_second));
  const [name, setName] = useState(game.name);
  const edits = useCan()('developer');
  const patch = async (p: GamePatch) => {
    const g = await action.run(() => api.patchGame(game.game_id, p));
    if (g) onSaved(g);
  };
  const save = (e: FormEvent) => {
    e.preventDefault();
    void patch({
      name: name.trim(),
      order_ttl_seconds: Number(ttl),
      gm_url: gmUrl.trim() === '' ? null : gmUrl.trim(),
      rate_limit_per_second: Number(rate),
    });
  };
  return (
    <Card title="Settings">
      <div className="switches">
        <Switch label="In-app purchases enabled" testId="iap-switch" checked={game.iap_enabled} disabled={action.busy || !edits} onChange={(v) => patch({ iap_enabled: v })} />
        <Switch
          label="Sandbox payments allowed"
          testId="sandbox-switch"
          checked={game.sandbox_payments}
          disabled={action.busy || !edits}
          onChange={(v) => patch({ sandbox_payments: v })}
        />
      </div>
      <form className="grid-form" onSubmit={save} noValidate>
        <Field label="Name">
          <input name="name" readOnly={!edits} value={name} onChange={(e) => setName(e.target.value)} />
        </Field>
        <Field label="Order TTL (seconds)" hint="60 to 2592000">
          <input name="order_ttl_seconds" type="number" min={60} max={2592000} value={ttl} onChange={(e) => setTtl(e.target.value)} />
        </Field>
        <Field label="GM URL" hint="empty: none">
          <input name="gm_url" value={gmUrl} placeholder="https://gm.example.com/combo" onChange={(e) => setGmUrl(e.target.value)} />
        </Field>
        <Field label="Rate limit (requests per second)">
          <input name="rate_limit_per_second" type="number" min={1} value={rate} onChange={(e) => setRate(e.target.value)} />
        </Field>
        <ErrorBox error={action.error} />
        {edits && (
          <button type="submit" className="primary" disabled={action.busy}>
            Save settings
          </button>
        )}
      </form>
      <p className="muted small">
        Created {time(game.created_at)} · updated {time(game.updated_at)}
        {game.nppa ? ` · NPPA app ${game.nppa.app_id}` : ''}
      </p>
      <p className="small" data-testid="gm-last-error">
        Last GM error:{' '}
        {game.gm_last_error === null ? (
          <span className="muted">none</span>
        ) : (
          <>
            <span className="mono">{game.gm_last_error}</span> <span className="muted">at {time(game.gm_last_error_at)}</span>
          </>
        )}
      </p>
    </Card>
  );
}

function Keys({ game, onChanged }: { game: Game; onChanged: () => void }) {
  const action = useAction();
  const [fresh, setFresh] = useState<NewSecret>();
  const edits = useCan()('developer');
  const create = async () => {
    const k = await action.run(() => api.createGameKey(game.game_id));
    if (k) {
      setFresh(k);
      onChanged();
    }
  };
  const remove = async (keyId: string) => {
    await action.run(() => api.deleteGameKey(game.game_id, keyId));
    onChanged();
  };
  return (
    <Card title="Signing keys" actions={edits && <button onClick={create} disabled={action.busy}>Create key</button>} id="keys">
      {fresh && <SecretOnce secret={fresh} onDone={() => setFresh(undefined)} />}
      <p className="muted">
        Notifications and GM calls are signed with the key the game last signed a request with (its oldest key until it has used
        another). A new key takes over once the game uses it; delete the old one after that.
      </p>
      <ErrorBox error={action.error} />
      <table>
        <thead>
          <tr>
            <th>Key id (newest first)</th>
            <th>Outgoing requests</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {game.key_ids.map((k) => (
            <tr key={k}>
              <td className="mono">{k}</td>
              <td>{k === game.signing_key_id ? <span className="badge badge-paid">signs notifications and GM calls</span> : ''}</td>
              <td className="right">
                {edits && <ConfirmButton label="Delete" danger question={`Delete key ${k}? Requests signed with it will fail.`} onConfirm={() => remove(k)} />}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Card>
  );
}

const EMPTY_PRODUCT = { product_id: '', name: '', price: '', currency: 'CNY', active: true };

function Products({ gameId }: { gameId: string }) {
  const list = useLoad(() => api.products(gameId), [gameId]);
  const [form, setForm] = useState(EMPTY_PRODUCT);
  const [editing, setEditing] = useState(false);
  const action = useAction();
  const edits = useCan()('developer');
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const p = await action.run(() =>
      api.putProduct(gameId, form.product_id.trim(), { name: form.name.trim(), price: Number(form.price), currency: form.currency.trim(), active: form.active }),
    );
    if (p) {
      setForm(EMPTY_PRODUCT);
      setEditing(false);
      list.reload();
    }
  };
  const edit = (p: Product) => {
    setForm({ product_id: p.product_id, name: p.name, price: String(p.price), currency: p.currency, active: p.active });
    setEditing(true);
  };
  return (
    <Card title="Products" id="products">
      <ErrorBox error={list.error} />
      <table>
        <thead>
          <tr>
            <th>Product id</th>
            <th>Name</th>
            <th className="right">Price</th>
            <th>Active</th>
            <th />
          </tr>
        </thead>
        <tbody>
          {(list.data?.data ?? []).map((p) => (
            <tr key={p.product_id}>
              <td className="mono">{p.product_id}</td>
              <td>{p.name}</td>
              <td className="right">{money(p.price, p.currency)}</td>
              <td>{p.active ? 'yes' : 'no'}</td>
              <td className="right">
                {edits && (
                  <button className="link" onClick={() => edit(p)}>
                    Edit
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.data?.raw !== undefined && <Json value={list.data.raw} label="Unrecognised answer" open />}
      {edits && <h3>{editing ? `Edit ${form.product_id}` : 'Add a product'}</h3>}
      {edits && <form className="grid-form" onSubmit={save} noValidate>
        <Field label="Product id">
          <input name="product_id" value={form.product_id} disabled={editing} onChange={(e) => setForm({ ...form, product_id: e.target.value })} />
        </Field>
        <Field label="Name">
          <input name="product_name" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
        </Field>
        <Field label="Price (minor units)" hint="integer, e.g. 600 = 6.00 CNY">
          <input name="price" type="number" min={1} step={1} value={form.price} onChange={(e) => setForm({ ...form, price: e.target.value })} />
        </Field>
        <Field label="Currency">
          <input name="currency" value={form.currency} maxLength={3} onChange={(e) => setForm({ ...form, currency: e.target.value.toUpperCase() })} />
        </Field>
        <Switch label="Active" checked={form.active} onChange={(v) => setForm({ ...form, active: v })} />
        <ErrorBox error={action.error} />
        <div className="row">
          <button type="submit" className="primary" disabled={!form.product_id.trim() || !form.name.trim() || !form.price || action.busy}>
            {editing ? 'Save product' : 'Add product'}
          </button>
          {editing && (
            <button type="button" onClick={() => (setForm(EMPTY_PRODUCT), setEditing(false))}>
              Cancel
            </button>
          )}
        </div>
      </form>}
    </Card>
  );
}
