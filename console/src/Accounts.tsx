import { useEffect, useState, type FormEvent } from 'react';
import { operatorsApi, type NewApiKey, type NewOperatorAccount, type OperatorAccount } from './api';
import { grantableRoles, useMe, type Role } from './me';
import { PagedTable, usePaged } from './lists';
import { Card, ConfirmButton, ErrorBox, Field, ShownOnce, StatusBadge, time, useAction } from './ui';

/** "a, b c" -> ["a", "b", "c"]; nothing -> null (every game). */
const parseGames = (text: string): string[] | null => {
  const games = text.split(/[\s,]+/).filter(Boolean);
  return games.length ? games : null;
};
const showGames = (games: string[] | null): string => games?.join(', ') ?? '';

function RoleSelect({ value, onChange, roles, label }: { value: string; onChange: (r: Role) => void; roles: Role[]; label: string }) {
  return (
    <select name="role" aria-label={label} value={value} onChange={(e) => onChange(e.target.value as Role)}>
      {roles.map((r) => (
        <option key={r} value={r}>
          {r}
        </option>
      ))}
    </select>
  );
}

/** Operator accounts (admin and owner): list, invite, change role and games, disable. */
export function AccountsPage() {
  const accounts = usePaged(() => operatorsApi.operators(), []);
  const [invited, setInvited] = useState<NewOperatorAccount>();
  return (
    <>
      <h1>Accounts</h1>
      <InviteForm onInvited={(a) => (setInvited(a), accounts.reload())} />
      {invited && (
        <ShownOnce
          title={`Invitation for ${invited.email}.`}
          note="Send this link to the person: it works once, for 72 hours, and is shown only now."
          value={invited.invitation.invitation_url}
          onDone={() => setInvited(undefined)}
          testId="invitation-once"
          valueTestId="invitation-link"
        />
      )}
      <PagedTable
        title="People"
        list={accounts}
        testId="accounts"
        headers={['Email', 'Name', 'Role', 'Games', 'Status', 'TOTP', '']}
        empty="No accounts yet: invite the first person."
        row={(a) => <AccountRow key={a.operator_id} account={a} onChanged={accounts.reload} />}
      />
    </>
  );
}

function InviteForm({ onInvited }: { onInvited: (a: NewOperatorAccount) => void }) {
  const me = useMe();
  const [f, setF] = useState({ email: '', name: '', role: 'viewer' as Role, games: '' });
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const a = await action.run(() => operatorsApi.invite({ email: f.email.trim(), name: f.name.trim(), role: f.role, games: parseGames(f.games) }));
    if (a) {
      setF({ email: '', name: '', role: 'viewer', games: '' });
      onInvited(a);
    }
  };
  return (
    <Card title="Invite a person">
      <form className="grid-form" onSubmit={submit}>
        <Field label="Email">
          <input name="email" type="email" value={f.email} onChange={(e) => setF({ ...f, email: e.target.value })} />
        </Field>
        <Field label="Name">
          <input name="name" value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
        </Field>
        <Field label="Role">
          <RoleSelect label="Role" value={f.role} roles={grantableRoles(me)} onChange={(role) => setF({ ...f, role })} />
        </Field>
        <Field label="Games" hint="game ids, comma separated; empty: every game">
          <input name="games" value={f.games} onChange={(e) => setF({ ...f, games: e.target.value })} />
        </Field>
        <button type="submit" className="primary" disabled={!f.email.trim() || !f.name.trim() || action.busy}>
          Invite
        </button>
      </form>
      <ErrorBox error={action.error} />
    </Card>
  );
}

function AccountRow({ account: a, onChanged }: { account: OperatorAccount; onChanged: () => void }) {
  const me = useMe();
  const [role, setRole] = useState<Role>(a.role);
  const [games, setGames] = useState(showGames(a.games));
  // The row stays mounted when the list is loaded again (after any change), so that a Disable
  // being confirmed is not closed by it; the fields show the account as stored once it changed.
  useEffect(() => {
    setRole(a.role);
    setGames(showGames(a.games));
  }, [a.updated_at]);
  const action = useAction();
  const roles = grantableRoles(me);
  // Not one's own account (the API refuses it), nor one above what the caller may give.
  const editable = a.operator_id !== me?.operator?.operator_id && roles.includes(a.role);
  const save = async (patch: Parameters<typeof operatorsApi.patchOperator>[1]) => {
    if (await action.run(() => operatorsApi.patchOperator(a.operator_id, patch))) onChanged();
  };
  const changed = role !== a.role || games.trim() !== showGames(a.games);
  return (
    <tr data-testid={`account-${a.email}`}>
      <td>{a.email}</td>
      <td>{a.name}</td>
      <td className="nowrap">{editable ? <RoleSelect label={`Role of ${a.email}`} value={role} roles={roles} onChange={setRole} /> : a.role}</td>
      <td>{editable ? <input name="account_games" aria-label={`Games of ${a.email}`} placeholder="every game" value={games} onChange={(e) => setGames(e.target.value)} /> : showGames(a.games) || 'every game'}</td>
      <td>
        <StatusBadge status={a.status} />
      </td>
      <td>{a.totp_enabled ? 'on' : 'off'}</td>
      <td className="nowrap">
        {editable && (
          <div className="row">
            <button disabled={!changed || action.busy} onClick={() => save({ role, games: parseGames(games) })}>
              Save
            </button>
            {a.status === 'disabled' ? (
              <button disabled={action.busy} onClick={() => save({ disabled: false })}>
                Enable
              </button>
            ) : (
              <ConfirmButton label="Disable" danger question={`Disable ${a.email}? Their sessions end.`} disabled={action.busy} onConfirm={() => save({ disabled: true })} />
            )}
          </div>
        )}
        <ErrorBox error={action.error} />
      </td>
    </tr>
  );
}

/** API keys for automation (admin and owner): create (the key shown once), list, revoke. */
export function ApiKeysPage() {
  const keys = usePaged(() => operatorsApi.apiKeys(), []);
  const [created, setCreated] = useState<NewApiKey>();
  return (
    <>
      <h1>API keys</h1>
      <CreateKeyForm onCreated={(k) => (setCreated(k), keys.reload())} />
      {created && (
        <ShownOnce
          title={`New API key ${created.name}.`}
          note="Copy it now: it is shown only this once (use it as Authorization: Bearer)."
          value={created.api_key}
          onDone={() => setCreated(undefined)}
          testId="api-key-once"
          valueTestId="api-key-value"
        />
      )}
      <PagedTable
        title="Keys"
        list={keys}
        testId="api-keys"
        headers={['Name', 'Role', 'Games', 'Made by', 'Created', 'Expires', 'Last used', '']}
        empty="No API keys."
        row={(k) => (
          <tr key={k.key_id} data-testid={`api-key-${k.name}`}>
            <td>
              {k.name} <span className="mono muted">{k.key_id}</span>
            </td>
            <td className="nowrap">{k.role}</td>
            <td>{showGames(k.games) || 'every game'}</td>
            <td>{k.created_by}</td>
            <td className="nowrap">{time(k.created_at)}</td>
            <td className="nowrap">{k.expires_at ? time(k.expires_at) : 'never'}</td>
            <td className="nowrap">{k.last_used_at ? time(k.last_used_at) : 'never'}</td>
            <td className="nowrap">{k.revoked_at ? <span className="muted">revoked {time(k.revoked_at)}</span> : <RevokeKey keyId={k.key_id} name={k.name} onDone={keys.reload} />}</td>
          </tr>
        )}
      />
    </>
  );
}

function RevokeKey({ keyId, name, onDone }: { keyId: string; name: string; onDone: () => void }) {
  const action = useAction();
  return (
    <>
      <ConfirmButton
        label="Revoke"
        danger
        question={`Revoke ${name}? Requests with it fail from now on.`}
        disabled={action.busy}
        onConfirm={async () => {
          if ((await action.run(() => operatorsApi.revokeApiKey(keyId))) !== undefined) onDone();
        }}
      />
      <ErrorBox error={action.error} />
    </>
  );
}

function CreateKeyForm({ onCreated }: { onCreated: (k: NewApiKey) => void }) {
  const me = useMe();
  const [f, setF] = useState({ name: '', role: 'viewer' as Role, games: '', days: '' });
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const days = Number(f.days);
    const expires_at = f.days.trim() && days > 0 ? Date.now() + days * 86_400_000 : null;
    const k = await action.run(() => operatorsApi.createApiKey({ name: f.name.trim(), role: f.role, games: parseGames(f.games), expires_at }));
    if (k) {
      setF({ name: '', role: 'viewer', games: '', days: '' });
      onCreated(k);
    }
  };
  return (
    <Card title="Create an API key">
      <form className="grid-form" onSubmit={submit}>
        <Field label="Key name">
          <input name="name" value={f.name} onChange={(e) => setF({ ...f, name: e.target.value })} />
        </Field>
        <Field label="Key role">
          <RoleSelect label="Key role" value={f.role} roles={grantableRoles(me)} onChange={(role) => setF({ ...f, role })} />
        </Field>
        <Field label="Key games" hint="game ids, comma separated; empty: every game">
          <input name="games" value={f.games} onChange={(e) => setF({ ...f, games: e.target.value })} />
        </Field>
        <Field label="Expires in days" hint="empty: never">
          <input name="days" type="number" min={1} value={f.days} onChange={(e) => setF({ ...f, days: e.target.value })} />
        </Field>
        <button type="submit" className="primary" disabled={!f.name.trim() || action.busy}>
          Create key
        </button>
      </form>
      <ErrorBox error={action.error} />
    </Card>
  );
}
