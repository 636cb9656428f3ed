import { useEffect, useState, type FormEvent } from 'react';
import { api, onUnauthorized, session } from './api';
import { GameDetail, Games } from './Games';
import { NotificationsPage } from './Notifications';
import { OrderDetailPage, OrdersPage } from './Orders';
import { AuditPage } from './Audit';
import { PaymentsPage } from './Channels';
import { Overview } from './Overview';
import { PartnerDetail, Partners } from './Partners';
import { ReconciliationsPage } from './Reconciliations';
import { Link, match, navigate, useRoute } from './router';
import { SessionsPage } from './Sessions';
import { ErrorBox, Field, useAction } from './ui';
import { isOperatorName } from '../../src/lib/operator-name';

const NAV: [string, string][] = [
  ['/', 'Overview'],
  ['/games', 'Games'],
  ['/orders', 'Orders'],
  ['/notifications', 'Failed notifications'],
  ['/sessions', 'Sessions'],
  ['/partners', 'Partners'],
  ['/payments', 'Payments'],
  ['/reconciliations', 'Reconciliation'],
  ['/audit', 'Audit log'],
];

export function App() {
  const { path, query } = useRoute();
  const [signedIn, setSignedIn] = useState(() => session.token() !== null);

  useEffect(() => {
    // Any 401 (token revoked, service restarted with another ADMIN_TOKEN): back to sign-in.
    onUnauthorized(() => setSignedIn(false));
  }, []);

  if (!signedIn || path === '/signin') {
    return <SignIn onSignedIn={() => (setSignedIn(true), path === '/signin' && navigate('/', true))} expired={!signedIn && path !== '/signin'} />;
  }
  const section = NAV.slice(1).find(([p]) => path === p || path.startsWith(p + '/'))?.[0] ?? '/';
  return (
    <div className="layout">
      <nav className="sidebar">
        <div className="brand">Combo platform</div>
        {NAV.map(([p, label]) => (
          <Link key={p} to={p} className={section === p ? 'active' : ''}>
            {label}
          </Link>
        ))}
        <a className="external" href="/docs" target="_blank" rel="noreferrer">
          API reference
        </a>
        <button
          className="signout"
          onClick={() => {
            session.signOut();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </nav>
      <main>
        {/* Keyed by the query too: a link to the same page with other filters starts it afresh. */}
        <Page key={path + '?' + query.toString()} path={path} />
      </main>
    </div>
  );
}

function Page({ path }: { path: string }) {
  let m: Record<string, string> | null;
  if (path === '/' || path === '/overview') return <Overview />;
  if (path === '/games') return <Games />;
  if ((m = match('/games/:id', path))) return <GameDetail gameId={m.id as string} />;
  if (path === '/partners') return <Partners />;
  if ((m = match('/partners/:id', path))) return <PartnerDetail partnerId={m.id as string} />;
  if (path === '/orders') return <OrdersPage />;
  if ((m = match('/orders/:id', path))) return <OrderDetailPage orderId={m.id as string} />;
  if (path === '/notifications') return <NotificationsPage />;
  if (path === '/sessions') return <SessionsPage />;
  if (path === '/payments') return <PaymentsPage />;
  if (path === '/reconciliations') return <ReconciliationsPage />;
  if (path === '/audit') return <AuditPage />;
  return (
    <div className="card">
      <h2>Not found</h2>
      <p>
        No console page at {path}. <Link to="/">Go to the overview</Link>.
      </p>
    </div>
  );
}

function SignIn({ onSignedIn, expired }: { onSignedIn: () => void; expired: boolean }) {
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
    <div className="signin">
      <form className="card" onSubmit={submit}>
        <h1>Combo platform console</h1>
        <p className="muted">Sign in with the service's operator token (ADMIN_TOKEN). It is kept in this browser tab only.</p>
        {expired && session.token() === null && <p className="muted">Your session ended or the token was not accepted.</p>}
        <Field label="Admin token">
          <input type="password" name="token" autoComplete="current-password" value={token} onChange={(e) => setToken(e.target.value)} autoFocus />
        </Field>
        <Field label="Your name (optional)" hint="recorded in the audit log as admin:<name>">
          <input name="operator" maxLength={64} value={operator} onChange={(e) => setOperator(e.target.value)} />
        </Field>
        <ErrorBox error={action.error} />
        <button type="submit" className="primary" disabled={!token.trim() || action.busy}>
          {action.busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </div>
  );
}
