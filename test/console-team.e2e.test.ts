/**
 * operators.md 1 in the web console, in a real headless Chromium against a real service: sign-in
 * with email and password (and TOTP), the invitation page, the accounts and API keys pages, what
 * each role sees and cannot press, the game switcher per person, and the OpenID Connect button.
 */
import * as OTPAuth from 'otpauth';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openConsoleBrowser, pageOverflow, type ConsoleBrowser } from './helpers/console-browser.js';
import { startOidcProvider, type OidcProvider } from './helpers/oidc-provider.js';
import { bearer, call, createAccount, PASSWORD, signIn as apiSignIn, withSession } from './helpers/operators.js';
import { createOrder } from './helpers/orders.js';
import { paidOrder } from './helpers/paid-orders.js';
import { freePort } from './helpers/ports.js';
import { ADMIN_TOKEN, admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 900 };
/** Nobody listens there: the paid orders' notifications stay undelivered (Retry now). */
const NOWHERE = 'http://127.0.0.1:9/notify';

describe.skipIf(!haveChromium)('console for a team (headless Chromium)', () => {
  let t: TestService;
  let browser: ConsoleBrowser;
  let page: Page;
  let g1: TestGame;
  let g2: TestGame;
  let n = 0;
  const go = (p: string) => page.goto(`${t.url}/console${p}`);
  const email = (role: string) => `${role}-${++n}@studio.example`;
  const button = (name: string) => page.getByRole('button', { name, exact: true });
  const nav = (name: string) => page.locator('nav.sidebar').getByRole('link', { name, exact: true });

  beforeAll(async () => {
    t = await startService({ env: { NOTIFY_RETRY_BASE_MS: '600000' } });
    g1 = await createGame(t);
    g2 = await createGame(t);
    browser = await openConsoleBrowser();
    page = browser.page;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
  });

  /** Forgets whoever was signed in in this browser profile (cookie and tab), keeping localStorage. */
  async function signedOut(): Promise<void> {
    await browser.ctx.clearCookies();
    await page.evaluate(() => sessionStorage.clear()).catch(() => undefined);
  }

  /** The browser signed in as `email` (its session cookie, as the sign-in page would set it), on `path`. */
  async function as(emailAddress: string, path = '/'): Promise<void> {
    await signedOut();
    const s = await apiSignIn(t, emailAddress);
    const [name, value] = s.cookie.split('=') as [string, string];
    await browser.ctx.addCookies([{ name, value, url: t.url, httpOnly: true, sameSite: 'Strict' }]);
    await go(path);
    await page.getByTestId('whoami').getByText(emailAddress).waitFor();
  }

  async function fillSignIn(emailAddress: string, password: string): Promise<void> {
    await page.getByLabel('Email').fill(emailAddress);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await button('Sign in').click();
  }

  it('signs in with email and password; writes carry the CSRF token; signs out', async () => {
    const who = email('developer');
    await createAccount(t, who, 'developer');
    await signedOut();
    await go('/');
    await page.getByRole('heading', { name: 'Combo platform console' }).waitFor();
    expect(await page.getByTestId('oidc-sign-in').count()).toBe(0);
    await browser.shot('team-signin');
    await page.setViewportSize(PHONE);
    expect(await pageOverflow(page)).toBe(0);
    await browser.shot('team-signin-390');
    await page.setViewportSize(DESKTOP);

    await fillSignIn(who, PASSWORD);
    await page.getByRole('heading', { name: /^Overview/ }).waitFor();
    expect(await page.getByTestId('whoami').textContent()).toBe(`${who} · developer`);
    expect(await page.evaluate(() => sessionStorage.getItem('combo.console.token'))).toBeNull();

    // A write with the session cookie (the CSRF token goes with it): the sandbox switch.
    await go(`/games/${g2.gameId}`);
    const sandbox = page.getByTestId('sandbox-switch');
    const before = await sandbox.isChecked();
    await sandbox.click({ force: true });
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/games/${g2.gameId}`)).body.sandbox_payments).toBe(!before);
    const audit = await admin(t, 'GET', `/admin/v1/audit?action=game.update&target=${g2.gameId}`);
    expect(audit.body.data[0].actor).toBe(who);

    await button('Sign out').click();
    await page.getByLabel('Email').waitFor();
    expect((await browser.ctx.cookies()).filter((c) => c.name === 'combo_session' && c.value)).toEqual([]);
    await go('/orders');
    await page.getByLabel('Email').waitFor();
  });

  it('shows the error of a wrong password and stays on the sign-in page', async () => {
    const who = email('viewer');
    await createAccount(t, who, 'viewer');
    await signedOut();
    await go('/');
    await fillSignIn(who, 'not the password at all');
    await page.getByTestId('password-sign-in').getByRole('alert').getByText('email or password is wrong').waitFor();
    expect(await page.getByTestId('whoami').count()).toBe(0);
  });

  it('returns to the sign-in page, saying so, when the session ends', async () => {
    const who = email('viewer');
    await createAccount(t, who, 'viewer');
    await as(who);
    await browser.ctx.clearCookies();
    await nav('Orders').click();
    await page.getByText('Your session ended or the token was not accepted.').waitFor();
    await page.getByLabel('Email').waitFor();
  });

  it('enrols TOTP on the account page, then asks for the code at sign-in', async () => {
    const who = email('support');
    await createAccount(t, who, 'support');
    await as(who, '/account');
    await page.getByRole('heading', { name: 'My account' }).waitFor();
    await button('Set up TOTP').click();
    const secret = (await page.getByTestId('totp-secret').textContent()) as string;
    expect(await page.getByTestId('totp-uri').textContent()).toMatch(/^otpauth:\/\/totp\//);
    const totp = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) });
    await page.getByLabel('Code').fill(totp.generate());
    await button('Turn TOTP on').click();
    await page.getByTestId('totp-state').getByText('TOTP is on').waitFor();
    // This session is listed as the current one.
    await page.getByTestId('my-sessions').getByText('this one').waitFor();

    await button('Sign out').click();
    await fillSignIn(who, PASSWORD);
    await page.getByLabel('TOTP code').fill('000000' === totp.generate() ? '111111' : '000000');
    await button('Verify code').click();
    await page.getByRole('alert').getByText('the TOTP code is wrong').waitFor();
    // The code that turned TOTP on was taken (a code signs in once): the next time step's, inside
    // the accepted window.
    await page.getByLabel('TOTP code').fill(totp.generate({ timestamp: Date.now() + 30_000 }));
    await button('Verify code').click();
    // Signed in where the session ended: the account page.
    await page.getByRole('heading', { name: 'My account' }).waitFor();
    expect(await page.getByTestId('whoami').textContent()).toBe(`${who} · support`);
  });

  it('changes the password on the account page: the current one is checked, the other sessions end', async () => {
    const who = email('developer');
    await createAccount(t, who, 'developer');
    const other = await apiSignIn(t, who);
    await as(who, '/account');
    const form = page.locator('form').filter({ has: page.getByLabel('Current password') });
    const fill = async (current: string, next: string, again = next) => {
      await page.getByLabel('Current password').fill(current);
      await page.getByLabel('New password').fill(next);
      await page.getByLabel('Repeat the password').fill(again);
      await button('Change password').click();
    };
    const NEW = 'a brand new passphrase 42';
    // Checked in the page before the API is asked: 11 characters, then two that differ.
    await fill(PASSWORD, NEW.slice(0, 11));
    await form.getByRole('alert').getByText('The password must be at least 12 characters long').waitFor();
    await fill(PASSWORD, NEW, `${NEW}!`);
    await form.getByRole('alert').getByText('The two passwords differ').waitFor();
    // The API refuses a wrong current password.
    await fill('not the current one', NEW);
    await form.getByRole('alert').getByText('current_password is wrong').waitFor();
    expect((await call(t, 'GET', '/admin/v1/me', withSession(other))).status).toBe(200);

    // 12 characters exactly pass the page's check and the API's.
    const twelve = NEW.slice(0, 12);
    await fill(PASSWORD, twelve);
    await page.getByTestId('password-changed').waitFor();
    expect(await page.getByLabel('Current password').inputValue()).toBe('');
    // This session goes on; the other one has ended; the audit log has the change.
    await nav('Orders').click();
    await page.getByRole('heading', { name: 'Orders', exact: true }).waitFor();
    expect((await call(t, 'GET', '/admin/v1/me', withSession(other))).status).toBe(401);
    const audit = await admin(t, 'GET', '/admin/v1/audit?action=operator.password');
    expect(audit.body.data.some((e: { actor: string }) => e.actor === who)).toBe(true);
    // The old password no longer signs in; the new one does.
    expect((await call(t, 'POST', '/admin/v1/session', {}, { email: who, password: PASSWORD })).status).toBe(401);
    await button('Sign out').click();
    await fillSignIn(who, twelve);
    await page.getByTestId('whoami').getByText(who).waitFor();
  });

  it('the invitation page sets a password (12 characters at least) and signs the person in', async () => {
    const who = email('finance');
    const created = await admin(t, 'POST', '/admin/v1/operators', { email: who, name: 'Fin', role: 'finance' });
    const link = new URL(created.body.invitation.invitation_url);
    await signedOut();
    await page.goto(`${t.url}${link.pathname}`);
    await page.getByTestId('invited-email').getByText(who).waitFor();
    await page.getByLabel('New password').fill('too short');
    await page.getByLabel('Repeat the password').fill('too short');
    await button('Set password and sign in').click();
    await page.getByRole('alert').getByText('The password must be at least 12 characters long').waitFor();
    await page.getByLabel('New password').fill(PASSWORD);
    await page.getByLabel('Repeat the password').fill(PASSWORD);
    await button('Set password and sign in').click();
    await page.getByRole('heading', { name: /^Overview/ }).waitFor();
    expect(await page.getByTestId('whoami').textContent()).toBe(`${who} · finance`);
    // The link worked once.
    await page.goto(`${t.url}${link.pathname}`);
    await page.getByRole('alert').getByText('This invitation link is unknown, used or expired').waitFor();
  });

  describe('what each role sees', () => {
    let paid: string;
    let unpaid: string;
    beforeAll(async () => {
      paid = (await paidOrder(t, g1, NOWHERE)).order.order_id;
      unpaid = (await createOrder(t, g1)).order_id;
    });

    /** The buttons and pages of one role, each present or absent. */
    async function seen(): Promise<Record<string, boolean>> {
      const has = async (l: { count(): Promise<number> }) => (await l.count()) > 0;
      const out: Record<string, boolean> = {};
      out.accountsPage = await has(nav('Accounts'));
      out.apiKeysPage = await has(nav('API keys'));
      await go(`/orders/${paid}`);
      await page.getByTestId('notification').waitFor();
      out.refund = await has(button('Refund'));
      out.retry = await has(page.getByTestId('notification').getByRole('button', { name: /^(Retry now|Redeliver)$/ }));
      await go(`/orders/${unpaid}`);
      await page.getByRole('heading', { name: new RegExp(unpaid) }).waitFor();
      out.cancel = await has(button('Cancel order'));
      await go(`/notifications?game_id=${g1.gameId}&status=`);
      await page.getByTestId('notifications-table').waitFor();
      out.retryAllFailing = await has(button('Retry all failing now'));
      await go(`/games/${g1.gameId}`);
      await page.getByTestId('iap-switch').waitFor();
      out.saveSettings = await has(button('Save settings'));
      out.createKey = await has(button('Create key'));
      out.saveChannel = await has(button('Save channel'));
      out.iapSwitch = await page.getByTestId('iap-switch').isEnabled();
      await go(`/reconciliations?game_id=${g1.gameId}`);
      await page.getByTestId('reconciliations-table').waitFor();
      out.reconcile = await has(button('Reconcile'));
      await go('/partners');
      await page.getByRole('heading', { name: 'Partners', exact: true }).waitFor();
      out.createPartner = await has(page.getByRole('button', { name: 'Create partner' }));
      return out;
    }

    const NONE = { accountsPage: false, apiKeysPage: false, refund: false, retry: false, cancel: false, retryAllFailing: false, saveSettings: false, createKey: false, saveChannel: false, iapSwitch: false, reconcile: false, createPartner: false };
    const SUPPORT = { ...NONE, retry: true, cancel: true, retryAllFailing: true };
    const DEVELOPER = { ...SUPPORT, saveSettings: true, createKey: true, saveChannel: true, iapSwitch: true };
    const FINANCE = { ...DEVELOPER, refund: true, reconcile: true };
    const ADMIN = { ...FINANCE, accountsPage: true, apiKeysPage: true, createPartner: true };

    it.each([
      ['viewer', NONE],
      ['support', SUPPORT],
      ['developer', DEVELOPER],
      ['finance', FINANCE],
      ['admin', ADMIN],
    ])('%s', async (role, expected) => {
      const who = email(role);
      await createAccount(t, who, role);
      await as(who);
      expect(await seen()).toEqual(expected);
      if (!expected.accountsPage) {
        // A page the role may not use is not there, even by its address.
        await go('/accounts');
        await page.getByRole('heading', { name: 'Not found' }).waitFor();
      }
    });
  });

  it("a developer limited to one game is offered only that game in the switcher", async () => {
    const who = email('developer');
    await createAccount(t, who, 'developer', [g1.gameId]);
    await as(who);
    const choices = page.getByTestId('game-choices');
    await choices.getByRole('button', { name: new RegExp(g1.gameId) }).waitFor();
    expect(await choices.getByRole('button').count()).toBe(1);
    expect(await choices.textContent()).not.toContain(g2.gameId);
    // Pages about no game (partners, the audit log, accounts) are not offered to it.
    expect(await nav('Partners').count()).toBe(0);
    expect(await nav('Audit log').count()).toBe(0);
  });

  it('remembers the switcher per person: two accounts in one browser profile keep their own game', async () => {
    const ann = email('viewer');
    const bob = email('viewer');
    const annId = (await createAccount(t, ann, 'viewer')).operatorId;
    const bobId = (await createAccount(t, bob, 'viewer')).operatorId;
    const pick = async (game: TestGame) => {
      await page.getByTestId('game-choices').getByRole('button', { name: new RegExp(game.gameId) }).click();
      await page.getByRole('heading', { name: `Overview ${game.gameId}` }).waitFor();
    };
    await as(ann);
    await pick(g1);
    await as(bob);
    await page.getByTestId('game-choices').waitFor();
    await pick(g2);
    await as(ann);
    await page.getByRole('heading', { name: `Overview ${g1.gameId}` }).waitFor();
    await as(bob);
    await page.getByRole('heading', { name: `Overview ${g2.gameId}` }).waitFor();
    const stored = await page.evaluate((ids) => ids.map((id) => localStorage.getItem(`combo.console.recentGames.${id}`)), [annId, bobId]);
    expect(stored).toEqual([JSON.stringify([g1.gameId]), JSON.stringify([g2.gameId])]);
    // ADMIN_TOKEN keeps a list of its own.
    expect(await page.evaluate(() => localStorage.getItem('combo.console.recentGames'))).toBeNull();
  });

  it('the accounts page invites (the link once), changes a role and games, and disables', async () => {
    const lead = email('admin');
    await createAccount(t, lead, 'admin');
    await as(lead, '/accounts');
    const invitee = email('viewer');
    await page.getByLabel('Email', { exact: true }).fill(invitee);
    await page.getByLabel('Name', { exact: true }).fill('New person');
    await page.getByLabel('Role', { exact: true }).selectOption('support');
    await page.locator('input[name="games"]').fill(g1.gameId);
    await button('Invite').click();
    const link = (await page.getByTestId('invitation-link').textContent()) as string;
    expect(link).toMatch(/\/console\/invite\/[^/]+$/);
    // An admin cannot give owner (operators.md 1): it is not offered.
    expect(await page.getByLabel('Role', { exact: true }).locator('option').allTextContents()).toEqual(['viewer', 'support', 'developer', 'finance', 'admin']);
    const row = page.getByTestId(`account-${invitee}`);
    await row.getByText('invited').waitFor();
    await browser.shot('team-accounts');
    await page.setViewportSize(PHONE);
    expect(await pageOverflow(page)).toBe(0);
    await browser.shot('team-accounts-390');
    await page.setViewportSize(DESKTOP);
    await button('I have stored it').click();
    expect(await page.getByTestId('invitation-link').count()).toBe(0);

    await row.getByLabel(`Role of ${invitee}`).selectOption('developer');
    await row.getByLabel(`Games of ${invitee}`).fill(`${g1.gameId}, ${g2.gameId}`);
    await row.getByRole('button', { name: 'Save' }).click();
    const id = (await admin(t, 'GET', '/admin/v1/operators')).body.data.find((a: { email: string }) => a.email === invitee).operator_id;
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/operators/${id}`)).body).toMatchObject({ role: 'developer', games: [g1.gameId, g2.gameId].sort() });
    await page.getByTestId(`account-${invitee}`).getByRole('button', { name: 'Disable' }).click();
    // The list loaded again while the question is open (here by another invitation), with this
    // account changed meanwhile by someone else: the row shows the stored games, and the
    // question stays open (the row is not built anew).
    await page.getByRole('button', { name: 'Confirm' }).waitFor();
    await admin(t, 'PATCH', `/admin/v1/operators/${id}`, { games: [g1.gameId] });
    const second = email('viewer');
    await page.getByLabel('Email', { exact: true }).fill(second);
    await page.getByLabel('Name', { exact: true }).fill('Second person');
    await button('Invite').click();
    await page.getByTestId(`account-${second}`).waitFor();
    await expect.poll(() => page.getByTestId(`account-${invitee}`).getByLabel(`Games of ${invitee}`).inputValue()).toBe(g1.gameId);
    await button('I have stored it').click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByTestId(`account-${invitee}`).getByText('disabled').waitFor();
    expect((await admin(t, 'GET', `/admin/v1/operators/${id}`)).body.status).toBe('disabled');
  });

  it('the API keys page shows a new key once, its last use, and revokes it', async () => {
    const lead = email('admin');
    await createAccount(t, lead, 'admin');
    await as(lead, '/api-keys');
    await page.getByLabel('Key name').fill('ci-deploy');
    await page.getByLabel('Key role').selectOption('developer');
    await page.getByLabel('Key games').fill(g1.gameId);
    await button('Create key').click();
    const key = (await page.getByTestId('api-key-value').textContent()) as string;
    expect(key).toMatch(/^ak_/);
    const row = page.getByTestId('api-key-ci-deploy');
    await row.getByText('never').first().waitFor();
    await browser.shot('team-api-keys');
    await page.setViewportSize(PHONE);
    expect(await pageOverflow(page)).toBe(0);
    await browser.shot('team-api-keys-390');
    await page.setViewportSize(DESKTOP);
    // Shown once: not after the page is read again.
    await page.reload();
    await row.waitFor();
    expect(await page.getByTestId('api-key-value').count()).toBe(0);
    expect(await page.content()).not.toContain(key);

    expect((await call(t, 'GET', `/admin/v1/games/${g1.gameId}`, bearer(key))).status).toBe(200);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(async () => (await row.locator('td').nth(6).textContent()) ?? '').toMatch(/^\d{4}-\d\d-\d\d /);
    await row.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await row.getByText(/^revoked /).waitFor();
    expect((await call(t, 'GET', `/admin/v1/games/${g1.gameId}`, bearer(key))).status).toBe(401);
  });

  it('keeps the ADMIN_TOKEN sign-in apart, as an owner', async () => {
    await signedOut();
    await go('/');
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await button('Sign in with the token').click();
    await page.getByRole('heading', { name: /^Overview/ }).waitFor();
    expect(await page.getByTestId('whoami').textContent()).toBe('ADMIN_TOKEN · owner');
    expect(await nav('Accounts').count()).toBe(1);
    expect(await nav('My account').count()).toBe(0);
    await signedOut();
  });

  it('loads no failing console file and runs no failing script', () => {
    expect(browser.problems).toEqual([]);
  });
});

describe.skipIf(!haveChromium)('console sign-in with OpenID Connect (headless Chromium)', () => {
  let t: TestService;
  let provider: OidcProvider;
  let browser: ConsoleBrowser;

  beforeAll(async () => {
    // The provider sends the browser back to the service's own address: it is fixed first.
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    provider = await startOidcProvider(base);
    t = await startService({ env: { ...provider.env, PORT: String(port), OIDC_DISPLAY_NAME: 'Studio SSO' } });
    await createAccount(t, 'ann@studio.example', 'finance', null);
    browser = await openConsoleBrowser();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    provider?.close();
  });

  it('shows "Sign in with <OIDC_DISPLAY_NAME>" and signs in through the provider', async () => {
    const { page } = browser;
    await page.goto(`${t.url}/console/`);
    const oidc = page.getByTestId('oidc-sign-in');
    await oidc.waitFor();
    expect(await oidc.textContent()).toBe('Sign in with Studio SSO');
    await oidc.click();
    // The provider's own (development) sign-in page.
    await page.locator('input[name="login"]').fill('ann');
    await page.locator('input[name="password"]').fill('any');
    await page.locator('button[type="submit"]').first().click();
    await page.getByRole('heading', { name: /^Overview/ }).waitFor();
    expect(await page.getByTestId('whoami').textContent()).toBe('ann@studio.example · finance');
  });
});
