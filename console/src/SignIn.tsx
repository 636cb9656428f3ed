import { useState, type FormEvent } from 'react';
import { ApiError, api, operatorsApi, session } from './api';
import { navigate } from './router';
import { ErrorBox, Field, useAction, useLoad } from './ui';
import { isOperatorName } from '../../src/lib/operator-name';
import { checkNewPassword, NewPasswordFields } from './password';

/**
 * The sign-in page: email and password, then the TOTP code when the account has TOTP on; the
 * OpenID Connect provider's button when one is configured; and, apart, the break-glass sign-in
 * with ADMIN_TOKEN (unless the service turned it off).
 */
export function SignIn({ onSignedIn, expired }: { onSignedIn: () => void; expired: boolean }) {
  const options = useLoad(() => operatorsApi.signInOptions(), []);
  const o = options.data;
  return (
    <div className="signin">
      <PasswordSignIn onSignedIn={onSignedIn} expired={expired} oidc={o?.oidc ?? null} />
      {o?.admin_token !== false && <TokenSignIn onSignedIn={onSignedIn} />}
    </div>
  );
}

function PasswordSignIn(props: { onSignedIn: () => void; expired: boolean; oidc: { provider: string; start_url: string } | null }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [totp, setTotp] = useState('');
  const [needTotp, setNeedTotp] = useState(false);
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await action.run(async () => {
      try {
        await operatorsApi.signIn({ email: email.trim(), password, ...(needTotp ? { totp: totp.trim() } : {}) });
        return true;
      } catch (err) {
        if (err instanceof ApiError && err.code === 'totp_required') {
          setNeedTotp(true);
          return false;
        }
        throw err;
      }
    });
    if (ok) props.onSignedIn();
  };
  return (
    <form className="card" onSubmit={submit} data-testid="password-sign-in">
      <h1>Combo platform console</h1>
      {props.expired && <p className="muted">Your session ended or the token was not accepted.</p>}
      {!needTotp ? (
        <>
          <Field label="Email">
            <input type="email" name="email" autoComplete="username" value={email} onChange={(e) => setEmail(e.target.value)} autoFocus />
          </Field>
          <Field label="Password">
            <input type="password" name="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} />
          </Field>
        </>
      ) : (
        <Field label="TOTP code" hint="the 6-digit code of your authenticator app">
          <input name="totp" inputMode="numeric" autoComplete="one-time-code" maxLength={6} value={totp} onChange={(e) => setTotp(e.target.value)} autoFocus />
        </Field>
      )}
      <ErrorBox error={action.error} />
      <button type="submit" className="primary" disabled={!email.trim() || !password || (needTotp && !/^\d{6}$/.test(totp.trim())) || action.busy}>
        {action.busy ? 'Checking…' : needTotp ? 'Verify code' : 'Sign in'}
      </button>
      {needTotp && (
        <button type="button" onClick={() => (setNeedTotp(false), setTotp(''), action.clear())}>
          Back
        </button>
      )}
      {props.oidc && (
        <a className="button" href={props.oidc.start_url} data-testid="oidc-sign-in">
          Sign in with {props.oidc.provider}
        </a>
      )}
    </form>
  );
}

function TokenSignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const [operator, setOperator] = useState(() => session.operator() ?? '');
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await action.run(async () => {
      // A name the audit log cannot hold would be left out of every change without a word.
      if (operator.trim() && !isOperatorName(operator.trim())) {
        throw new Error('Your name must be 1 to 64 characters, without control or invisible characters');
      }
      await api.checkToken(token.trim());
      return true;
    });
    if (ok) {
      session.signIn(token.trim(), operator.trim());
      onSignedIn();
    }
  };
  return (
    <form className="card break-glass" onSubmit={submit} data-testid="token-sign-in">
      <h2>Break-glass: sign in with a token</h2>
      <p className="muted">The service's operator token (ADMIN_TOKEN). It is kept in this browser tab only.</p>
      <Field label="Admin token">
        <input type="password" name="token" autoComplete="off" value={token} onChange={(e) => setToken(e.target.value)} />
      </Field>
      <Field label="Your name (optional)" hint="recorded in the audit log as admin:<name>">
        <input name="operator" maxLength={64} value={operator} onChange={(e) => setOperator(e.target.value)} />
      </Field>
      <ErrorBox error={action.error} />
      <button type="submit" disabled={!token.trim() || action.busy}>
        {action.busy ? 'Checking…' : 'Sign in with the token'}
      </button>
    </form>
  );
}

/** /console/invite/<token>: the invited person sets a password, then is signed in. */
export function InvitePage({ token, onSignedIn }: { token: string; onSignedIn: () => void }) {
  const invitation = useLoad(() => operatorsApi.invitation(token), [token]);
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const action = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const email = invitation.data?.email as string;
    const ok = await action.run(async () => {
      checkNewPassword(password, again);
      await operatorsApi.acceptInvitation(token, password);
      return true;
    });
    if (!ok) return;
    // Signed in at once; an account that cannot be (TOTP on) goes to the sign-in page.
    const signedIn = await operatorsApi.signIn({ email, password }).then(
      () => true,
      () => false,
    );
    navigate('/', true);
    if (signedIn) onSignedIn();
  };
  return (
    <div className="signin">
      <form className="card" onSubmit={submit}>
        <h1>Join the Combo platform console</h1>
        {invitation.error ? (
          <p role="alert" className="error">
            This invitation link is unknown, used or expired: ask an admin for a new one.
          </p>
        ) : (
          <p className="muted">
            {invitation.data ? (
              <>
                Set a password for <strong data-testid="invited-email">{invitation.data.email}</strong> ({invitation.data.name}).
              </>
            ) : (
              'Loading…'
            )}
          </p>
        )}
        <NewPasswordFields password={password} again={again} onPassword={setPassword} onAgain={setAgain} autoFocus />
        <ErrorBox error={action.error} />
        <button type="submit" className="primary" disabled={!invitation.data || !password || action.busy}>
          Set password and sign in
        </button>
      </form>
    </div>
  );
}
