import { useCallback, useEffect, useRef, useState } from 'react';
import { onUnauthorized, operatorsApi, rememberAccount, session, type Me } from './api';
import { AccountsPage, ApiKeysPage } from './Accounts';
import { MyAccountPage } from './MyAccount';
import { MeContext, may, type Role } from './me';
import { InvitePage, SignIn } from './SignIn';
import { GameDetail, Games } from './Games';
import { NotificationsPage } from './Notifications';
import { OrderDetailPage, OrdersPage } from './Orders';
import { AuditPage } from './Audit';
import { PaymentsPage } from './Channels';
import { Overview } from './Overview';
import { PartnerDetail, Partners } from './Partners';
import { ReconciliationsPage } from './Reconciliations';
import { Link, match, navigate, useRoute } from './router';
import { SearchPage } from './Search';
import { SessionsPage } from './Sessions';

/** The pages: path, label, and who sees them (the least role; global: not for an account limited to some games). */
const NAV: { path: string; label: string; role?: Role; global?: boolean; accountOnly?: boolean }[] = [
  { path: '/', label: 'Overview' },
  { path: '/games', label: 'Games' },
  { path: '/search', label: 'Search' },
  { path: '/orders', label: 'Orders' },
  { path: '/notifications', label: 'Failed notifications' },
  { path: '/sessions', label: 'Sessions' },
  { path: '/partners', label: 'Partners', global: true },
  { path: '/payments', label: 'Payments' },
  { path: '/reconciliations', label: 'Reconciliation' },
  { path: '/audit', label: 'Audit log', global: true },
  { path: '/accounts', label: 'Accounts', role: 'admin', global: true },
  { path: '/api-keys', label: 'API keys', role: 'admin', global: true },
  { path: '/account', label: 'My account', accountOnly: true },
];

const visible = (me: Me, n: (typeof NAV)[number]) => may(me, n.role ?? 'viewer', n.global) && (!n.accountOnly || me.kind === 'account');

export function App() {
  const { path, query } = useRoute();
  // undefined: still asking who is signed in (a token of this tab, or the session cookie).
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  // Whether a sign-in of this page ended (a 401 while signed in): the sign-in page says so.
  const [ended, setEnded] = useState(false);
  const signedIn = useRef(false);
  signedIn.current = Boolean(me);
  const load = useCallback(() => {
    operatorsApi.me().then(
      (m) => (rememberAccount(m), setEnded(false), setMe(m)),
      () => (rememberAccount(null), setMe(null)),
    );
  }, []);

  useEffect(() => {
    // Any 401 (session ended, token revoked, service restarted with another ADMIN_TOKEN): back to sign-in.
    onUnauthorized(() => {
      if (signedIn.current) setEnded(true);
      rememberAccount(null);
      setMe(null);
    });
    load();
  }, [load]);

  const invite = match('/invite/:token', path);
  if (invite) return <InvitePage token={invite.token as string} onSignedIn={load} />;
  if (me === undefined) return <p className="muted signin">Loading…</p>;
  if (me === null || path === '/signin') {
    return <SignIn onSignedIn={() => (load(), path === '/signin' && navigate('/', true))} expired={ended} />;
  }
  const signOut = async () => {
    if (me.kind === 'account') await operatorsApi.signOut().catch(() => undefined);
    session.signOut();
    rememberAccount(null);
    setEnded(false);
    setMe(null);
  };
  const nav = NAV.filter((n) => visible(me, n));
  const section = nav.slice(1).find((n) => path === n.path || path.startsWith(n.path + '/'))?.path ?? '/';
  const allowed = NAV.every((n) => !(path === n.path || path.startsWith(n.path + '/')) || visible(me, n));
  return (
    <MeContext.Provider value={me}>
      <div className="layout">
        <nav className="sidebar">
          <div className="brand">Combo platform</div>
          {nav.map((n) => (
            <Link key={n.path} to={n.path} className={section === n.path ? 'active' : ''}>
              {n.label}
            </Link>
          ))}
          <a className="external" href="/docs" target="_blank" rel="noreferrer">
            API reference
          </a>
          <div className="whoami" data-testid="whoami">
            {me.actor} · {me.role}
          </div>
          <button className="signout" onClick={signOut}>
            Sign out
          </button>
        </nav>
        <main>
          {/* Keyed by the query too: a link to the same page with other filters starts it afresh. */}
          {allowed ? <Page key={path + '?' + query.toString()} path={path} /> : <NotFound path={path} />}
        </main>
      </div>
    </MeContext.Provider>
  );
}

function Page({ path }: { path: string }) {
  let m: Record<string, string> | null;
  if (path === '/' || path === '/overview') return <Overview />;
  if (path === '/games') return <Games />;
  if ((m = match('/games/:id', path))) return <GameDetail gameId={m.id as string} />;
  if (path === '/partners') return <Partners />;
  if ((m = match('/partners/:id', path))) return <PartnerDetail partnerId={m.id as string} />;
  if (path === '/search') return <SearchPage />;
  if (path === '/orders') return <OrdersPage />;
  if ((m = match('/orders/:id', path))) return <OrderDetailPage orderId={m.id as string} />;
  if (path === '/notifications') return <NotificationsPage />;
  if (path === '/sessions') return <SessionsPage />;
  if (path === '/payments') return <PaymentsPage />;
  if (path === '/reconciliations') return <ReconciliationsPage />;
  if (path === '/audit') return <AuditPage />;
  if (path === '/accounts') return <AccountsPage />;
  if (path === '/api-keys') return <ApiKeysPage />;
  if (path === '/account') return <MyAccountPage />;
  return <NotFound path={path} />;
}

function NotFound({ path }: { path: string }) {
  return (
    <div className="card">
      <h2>Not found</h2>
      <p>
        No console page at {path}. <Link to="/">Go to the overview</Link>.
      </p>
    </div>
  );
}
