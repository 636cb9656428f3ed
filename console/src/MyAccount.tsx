import { useState, type FormEvent } from 'react';
import { operatorsApi, type TotpSetup } from './api';
import { useMe } from './me';
import { checkNewPassword, NewPasswordFields } from './password';
import { PagedTable, usePaged } from './lists';
import { Card, ConfirmButton, ErrorBox, Field, time, useAction } from './ui';

/** The signed-in account's own page: who it is, TOTP, its open console sessions. */
export function MyAccountPage() {
  const me = useMe();
  const [totpOn, setTotpOn] = useState(me?.operator?.totp_enabled ?? false);
  if (!me?.operator) return null;
  const o = me.operator;
  return (
    <>
      <h1>My account</h1>
      <Card title={o.email}>
        <dl className="facts">
          <dt>Name</dt>
          <dd>{o.name}</dd>
          <dt>Role</dt>
          <dd data-testid="my-role">{o.role}</dd>
          <dt>Games</dt>
          <dd>{o.games?.join(', ') ?? 'every game'}</dd>
        </dl>
      </Card>
      {o.status === 'active' ? <ChangePassword /> : null}
      <Totp on={totpOn} onChange={setTotpOn} />
      <MySessions />
    </>
  );
}

/** The account's password: the current one, then the new one twice. The API ends the account's other sessions. */
function ChangePassword() {
  const [current, setCurrent] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [changed, setChanged] = useState(false);
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setChanged(false);
    const ok = await action.run(async () => {
      checkNewPassword(password, again);
      await operatorsApi.changePassword(current, password);
      return true;
    });
    if (!ok) return;
    setCurrent('');
    setPassword('');
    setAgain('');
    setChanged(true);
  };
  return (
    <Card title="Password">
      <form onSubmit={submit}>
        <Field label="Current password">
          <input type="password" name="current-password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} />
        </Field>
        <NewPasswordFields password={password} again={again} onPassword={setPassword} onAgain={setAgain} />
        <ErrorBox error={action.error} />
        {changed ? (
          <p className="muted" role="status" data-testid="password-changed">
            The password is changed; every other session of this account has ended.
          </p>
        ) : null}
        <button type="submit" className="primary" disabled={!current || !password || action.busy}>
          Change password
        </button>
      </form>
    </Card>
  );
}

function Totp({ on, onChange }: { on: boolean; onChange: (on: boolean) => void }) {
  const [setup, setSetup] = useState<TotpSetup>();
  const [code, setCode] = useState('');
  const action = useAction();
  const start = async () => setSetup(await action.run(() => operatorsApi.startTotp()));
  const verify = async (e: FormEvent) => {
    e.preventDefault();
    if ((await action.run(() => operatorsApi.verifyTotp(code.trim()))) !== undefined) {
      setSetup(undefined);
      setCode('');
      onChange(true);
    }
  };
  const remove = async () => {
    if ((await action.run(() => operatorsApi.removeTotp())) !== undefined) onChange(false);
  };
  return (
    <Card title="Two-step sign-in (TOTP)">
      {on ? (
        <div className="row">
          <span data-testid="totp-state">TOTP is on: sign-in asks for a code.</span>
          <ConfirmButton label="Turn TOTP off" danger question="Sign in without a code from now on?" onConfirm={remove} />
        </div>
      ) : !setup ? (
        <div className="row">
          <span data-testid="totp-state">TOTP is off.</span>
          <button onClick={start} disabled={action.busy}>
            Set up TOTP
          </button>
        </div>
      ) : (
        <form className="totp-setup" onSubmit={verify}>
          <p>Add this account to your authenticator app (scan or paste the link, or type the secret), then enter the code it shows.</p>
          <Field label="otpauth link">
            <code data-testid="totp-uri" className="wrap">
              {setup.otpauth_url}
            </code>
          </Field>
          <Field label="Secret">
            <code data-testid="totp-secret">{setup.secret}</code>
          </Field>
          <div className="row">
            <Field label="Code">
              <input name="code" inputMode="numeric" autoComplete="one-time-code" maxLength={6} value={code} onChange={(e) => setCode(e.target.value)} />
            </Field>
            <button type="submit" className="primary" disabled={!/^\d{6}$/.test(code.trim()) || action.busy}>
              Turn TOTP on
            </button>
          </div>
        </form>
      )}
      <ErrorBox error={action.error} />
    </Card>
  );
}

function MySessions() {
  const sessions = usePaged(() => operatorsApi.mySessions(), []);
  const action = useAction();
  const revoke = async (id: string) => {
    if ((await action.run(() => operatorsApi.revokeMySession(id))) !== undefined) sessions.reload();
  };
  return (
    <>
      <ErrorBox error={action.error} />
      <PagedTable
        title="Signed-in sessions"
        list={sessions}
        testId="my-sessions"
        headers={['Signed in', 'Last seen', 'How', 'From', '']}
        empty="No open session."
        row={(s) => (
          <tr key={s.session_id}>
            <td className="nowrap">{time(s.created_at)}</td>
            <td className="nowrap">{time(s.last_seen_at)}</td>
            <td>{s.method}</td>
            <td className="small">
              {s.address} {s.user_agent}
            </td>
            <td>{s.current ? <span className="muted">this one</span> : <ConfirmButton label="Revoke" danger question="End this session?" onConfirm={() => void revoke(s.session_id)} />}</td>
          </tr>
        )}
      />
    </>
  );
}
