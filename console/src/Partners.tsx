import { useState, type FormEvent } from 'react';
import { api, type NewSecret, type Partner } from './api';
import { Link, navigate } from './router';
import { PagedTable, usePaged } from './lists';
import { useCan } from './me';
import { Card, ConfirmButton, ErrorBox, Field, Json, SecretOnce, Switch, time, useAction, useLoad, Unloaded } from './ui';

const splitIds = (s: string) =>
  s
    .split(/[\s,]+/)
    .map((x) => x.trim())
    .filter(Boolean);

export function Partners() {
  const list = usePaged((cursor) => api.partners(cursor), []);
  const can = useCan();
  return (
    <>
      <h1>Partners</h1>
      <PagedTable
        title="All partners"
        list={list}
        headers={['Partner id', 'Name', 'Enabled', 'Games', 'Created']}
        empty="No partners yet."
        row={(p) => (
          <tr key={p.partner_id}>
            <td className="mono">
              <Link to={`/partners/${encodeURIComponent(p.partner_id)}`}>{p.partner_id}</Link>
            </td>
            <td>{p.name}</td>
            <td>{p.enabled ? 'yes' : 'no'}</td>
            <td>{(p.games ?? []).join(', ')}</td>
            <td className="nowrap">{time(p.created_at)}</td>
          </tr>
        )}
      />
      {can('admin', true) && <CreatePartner onCreated={list.reload} />}
    </>
  );
}

function CreatePartner({ onCreated }: { onCreated: () => void }) {
  const [f, setF] = useState({ partner_id: '', name: '', games: '' });
  const [created, setCreated] = useState<NewSecret & { partner_id: string }>();
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const p = await action.run(() => api.createPartner({ partner_id: f.partner_id.trim(), name: f.name.trim(), games: splitIds(f.games) }));
    if (p) {
      setCreated({ partner_id: p.partner_id, key_id: p.key_id, secret_key: p.secret_key });
      setF({ partner_id: '', name: '', games: '' });
      onCreated();
    }
  };
  return (
    <Card title="Create a partner">
      {created ? (
        <SecretOnce secret={created} onDone={() => navigate(`/partners/${encodeURIComponent(created.partner_id)}`)} />
      ) : (
        <form className="grid-form" onSubmit={submit}>
          <Field label="Partner id">
            <input name="partner_id" value={f.partner_id} onChange={(e) => setF({ ...f, partner_id: e.target.value })} />
          </Field>
          <Field label="Name">
            <input name="partner_name" value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
          </Field>
          <Field label="Granted games" hint="game ids, comma separated">
            <input name="partner_games" value={f.games} onChange={(e) => setF({ ...f, games: e.target.value })} />
          </Field>
          <ErrorBox error={action.error} />
          <button type="submit" className="primary" disabled={!f.partner_id.trim() || !f.name.trim() || action.busy}>
            Create partner
          </button>
        </form>
      )}
    </Card>
  );
}

export function PartnerDetail({ partnerId }: { partnerId: string }) {
  const partner = useLoad(() => api.partner(partnerId), [partnerId]);
  const action = useAction();
  const [fresh, setFresh] = useState<NewSecret>();
  const [addGame, setAddGame] = useState('');
  const edits = useCan()('admin', true);
  if (!partner.data) return <Unloaded loaded={partner} title={`Partner ${partnerId}`} back={{ to: '/partners', label: 'Back to partners' }} />;
  const p = partner.data;
  const patch = async (change: Partial<Pick<Partner, 'enabled' | 'games'>>) => {
    const next = await action.run(() => api.patchPartner(p.partner_id, change));
    if (next) partner.set(next);
  };
  const newKey = async () => {
    const k = await action.run(() => api.createPartnerKey(p.partner_id));
    if (k) {
      setFresh(k);
      partner.reload();
    }
  };
  const grant = (e: FormEvent) => {
    e.preventDefault();
    const add = splitIds(addGame).filter((g) => !p.games.includes(g));
    if (add.length) void patch({ games: [...p.games, ...add] });
    setAddGame('');
  };
  return (
    <>
      <h1>
        {p.name} <span className="muted mono">{p.partner_id}</span>
      </h1>
      <ErrorBox error={action.error} />
      <Card title="Status">
        <Switch label="Enabled" testId="partner-enabled" checked={p.enabled} disabled={action.busy || !edits} onChange={(v) => patch({ enabled: v })} />
        <p className="muted small">
          Rate limit {p.rate_limit_per_second}/s · created {time(p.created_at)} · updated {time(p.updated_at)}
        </p>
      </Card>
      <Card title="Granted games">
        <table>
          <tbody>
            {p.games.map((g) => (
              <tr key={g}>
                <td className="mono">
                  <Link to={`/games/${encodeURIComponent(g)}`}>{g}</Link>
                </td>
                <td className="right">
                  {edits && <ConfirmButton label="Revoke" danger question={`Revoke ${g}?`} onConfirm={() => patch({ games: p.games.filter((x) => x !== g) })} />}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {edits && <form className="row" onSubmit={grant}>
          <input name="grant_game" placeholder="game id" aria-label="Game id to grant" value={addGame} onChange={(e) => setAddGame(e.target.value)} />
          <button type="submit" disabled={!addGame.trim() || action.busy}>
            Grant
          </button>
        </form>}
      </Card>
      <Card title="Signing keys" actions={edits && <button onClick={newKey} disabled={action.busy}>Create key</button>}>
        {fresh && <SecretOnce secret={fresh} onDone={() => setFresh(undefined)} />}
        <table>
          <tbody>
            {p.key_ids.map((k) => (
              <tr key={k}>
                <td className="mono">{k}</td>
                <td className="right">
                  {edits && <ConfirmButton
                    label="Delete"
                    danger
                    question={`Delete key ${k}?`}
                    onConfirm={async () => {
                      await action.run(() => api.deletePartnerKey(p.partner_id, k));
                      partner.reload();
                    }}
                  />}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Card>
      <Json value={p} label="Partner (raw JSON)" />
    </>
  );
}
