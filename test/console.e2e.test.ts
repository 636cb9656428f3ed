import { type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openConsoleBrowser, signIn as signInWith, type ConsoleBrowser } from './helpers/console-browser.js';
import { createOrder, pay } from './helpers/orders.js';
import { paidOrder } from './helpers/paid-orders.js';
import { createPartner, partnerGet, queryUri } from './helpers/partners.js';
import { Receiver, ok, status, until } from './helpers/receiver.js';
import { ADMIN_TOKEN, admin, createGame, signed, startService, type TestGame, type TestService } from './helpers/service.js';

// The web console driven in a real headless Chromium against a real service.
describe.skipIf(!haveChromium)('web console (headless Chromium)', () => {
  let t: TestService;
  let browser: ConsoleBrowser;
  let page: Page;
  let receiver: Receiver;
  const keys = new Map<string, string[]>();
  let problems: string[] = [];

  const shot = (name: string) => browser.shot(name);
  const go = (p: string) => page.goto(`${t.url}/console${p}`);
  const signIn = (token = ADMIN_TOKEN) => signInWith(page, token);

  beforeAll(async () => {
    receiver = await new Receiver({ keys, now: () => Date.now() }).start();
    // A one-second retry window: a notification whose receiver keeps failing is `failed` at once.
    t = await startService({ env: { NOTIFY_MAX_AGE_SECONDS: '1', NOTIFY_RETRY_BASE_MS: '50', NOTIFY_POLL_INTERVAL_MS: '50' } });
    browser = await openConsoleBrowser();
    ({ page, problems } = browser);
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await receiver?.close();
  });

  it('refuses a wrong token and signs in with the admin token', async () => {
    await go('/');
    // The sign-in page is drawn once the console has asked who is signed in (GET /admin/v1/me).
    await page.getByRole('heading', { name: 'Combo platform console' }).waitFor();
    await signIn('not-the-token');
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('401');
    await shot('signin');
    await page.getByLabel('Admin token').fill('');
    // A name the audit log cannot hold (a bidi override) is refused at sign-in, not dropped later.
    await page.getByLabel('Your name (optional)').fill('ops-\u202eevil');
    await signIn();
    await page.getByRole('alert').getByText('Your name must be 1 to 64 characters').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('combo.console.token'))).toBeNull();
    await page.getByLabel('Admin token').fill('');
    await page.getByLabel('Your name (optional)').fill('ops-李雷');
    await signIn();
    await page.getByRole('heading', { name: /^Overview/ }).waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('combo.console.token'))).toBe(ADMIN_TOKEN);
  });

  it('toggles the IAP switch of a game (checked through the API)', async () => {
    const game = await createGame(t);
    await go('/games');
    await page.getByLabel('Game id', { exact: true }).fill(game.gameId);
    await page.getByRole('button', { name: 'Open' }).click();
    const iap = page.getByTestId('iap-switch');
    await iap.waitFor({ state: 'attached' });
    expect(await iap.isChecked()).toBe(true);
    await iap.click();
    await page.waitForFunction(() => !(document.querySelector('[data-testid="iap-switch"]') as HTMLInputElement).checked);
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).body.iap_enabled).toBe(false);
    // The page shows the service's answer after a reload too.
    await page.reload();
    await iap.waitFor({ state: 'attached' });
    expect(await iap.isChecked()).toBe(false);
    await shot('game');
    // Remembered as a recently used game.
    await go('/games');
    await page.getByTestId('recent-games').getByRole('link', { name: game.gameId }).waitFor();
    // The audit log names the authenticated actor (the console signs in with ADMIN_TOKEN here).
    await go(`/audit?action=game.update&target=${game.gameId}`);
    const entry = page.getByTestId('audit-table').locator('tbody tr').first();
    await entry.getByText('ADMIN_TOKEN').waitFor();
    expect(await entry.textContent()).toContain('"iap_enabled":false');
    // And the address the change came from.
    expect(await entry.textContent()).toContain('127.0.0.1');
    await shot('audit');
  });

  it("shows a game's payment channels with their callback_url (secrets as ***), and the flagged payments", async () => {
    const game = await createGame(t);
    const key = '-----BEGIN PRIVATE KEY-----\n' + 'A'.repeat(80) + '\n-----END PRIVATE KEY-----\n';
    const put = await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/channels/google`, { enabled: false, package_name: 'com.example.game', service_account: { client_email: 'pay@example.com', private_key: key } });
    expect(put.status, put.text).toBe(200);
    await go(`/games/${game.gameId}`);
    const table = page.getByTestId('channels-table');
    const google = table.locator('tbody tr', { hasText: 'google' });
    await google.waitFor();
    expect(await google.textContent()).toContain(`/v1/callbacks/google/${game.gameId}`);
    expect(await google.textContent()).toContain('***');
    expect(await table.textContent()).not.toContain('A'.repeat(80));
    await table.locator('tbody tr', { hasText: /^sandbox/ }).waitFor();
    await shot('channels');
    // A payment whose amount differs from the order's: flagged, listed for the operator.
    const o = await createOrder(t, game);
    await t.service.payments.confirm('sandbox', { provider_txn_id: `flag-${o.order_id}`, order_id: o.order_id, amount: 1, currency: 'CNY' });
    await go(`/payments?status=flagged&game_id=${game.gameId}`);
    const row = page.getByTestId('payments-table').locator('tbody tr', { hasText: o.order_id });
    await row.waitFor();
    expect(await row.textContent()).toContain('amount_mismatch');
    await shot('payments');
  });

  it('lists every game and opens one from the list', async () => {
    // An id that sorts before every other test's games: it is on the first page.
    const gameId = `0-list-${Date.now().toString(36)}`;
    expect((await admin(t, 'POST', '/admin/v1/games', { game_id: gameId, name: 'Listed game' })).status).toBe(201);
    await go('/games');
    const table = page.getByTestId('games-table');
    const row = table.locator('tbody tr', { hasText: gameId });
    await row.waitFor();
    expect(await row.textContent()).toContain('Listed game');
    await row.getByRole('link', { name: gameId }).click();
    await page.getByRole('heading', { name: /^Listed game/ }).waitFor();
  });

  it('saves order TTL and gm_url, and shows the API error for a bad value', async () => {
    const game = await createGame(t);
    await go(`/games/${game.gameId}`);
    await page.getByLabel('Order TTL (seconds)').fill('900');
    await page.getByLabel('GM URL').fill('https://gm.example.com/combo');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect
      .poll(async () => {
        const g = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).body;
        return [g.order_ttl_seconds, g.gm_url];
      })
      .toEqual([900, 'https://gm.example.com/combo']);
    await page.getByLabel('Order TTL (seconds)').fill('59');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('alert').waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('400 invalid_request');
  });

  it("shows the game's last GM error and its time (a partner query of a game with no GM URL)", async () => {
    const game = await createGame(t, { gm_url: null });
    const partner = await createPartner(t, [game.gameId]);
    const bind = { partner_id: partner.partnerId, partner_user_id: 'pu', combo_id: 'c-gm', role_id: 'r1' };
    expect((await signed(t, game, 'POST', '/v1/server/bind-partner-user', bind)).status).toBe(200);
    await go(`/games/${game.gameId}`);
    const line = page.getByTestId('gm-last-error');
    await line.getByText('none').waitFor();
    expect((await partnerGet(t, partner, queryUri(game.gameId, 'pu'))).status).toBe(500);
    const g = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).body;
    await page.reload();
    await line.getByText(`game ${game.gameId} has no GM URL`).waitFor();
    const at = new Date(g.gm_last_error_at as number).toISOString().replace('T', ' ').slice(0, 19);
    expect(await line.textContent()).toBe(`Last GM error: game ${game.gameId} has no GM URL at ${at}`);
  });

  it('creates a signing key and shows its secret once', async () => {
    const game = await createGame(t);
    await go(`/games/${game.gameId}`);
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = page.getByTestId('secret-value');
    await secret.waitFor();
    const value = (await secret.textContent()) ?? '';
    expect(value).toMatch(/^sk_/);
    const g = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}`)).body;
    expect(g.key_ids).toHaveLength(2);
    await page.getByRole('cell', { name: g.key_ids[0] }).waitFor();
    // The old key signs outgoing requests until the game signs one with the new key.
    expect(g.signing_key_id).toBe(game.keyId);
    await page.getByRole('row', { name: new RegExp(`${game.keyId}.*signs notifications and GM calls`) }).waitFor();
    expect(await page.getByRole('row', { name: new RegExp(g.key_ids[0]) }).textContent()).not.toContain('signs notifications');
    await shot('key');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await secret.waitFor({ state: 'detached' });
    await page.reload();
    await page.getByRole('cell', { name: g.key_ids[0] }).waitFor();
    expect(await page.content()).not.toContain(value);
  });

  it('creates and edits a product', async () => {
    const game = await createGame(t);
    await go(`/games/${game.gameId}`);
    await page.getByLabel('Product id').fill('gem_300');
    await page.getByLabel('Name', { exact: true }).last().fill('300 gems');
    await page.getByLabel('Price (minor units)').fill('3000');
    await page.getByRole('button', { name: 'Add product' }).click();
    await page.getByRole('cell', { name: 'gem_300' }).waitFor();
    await page.getByRole('cell', { name: '30.00 CNY' }).waitFor();
    const p = (await admin(t, 'GET', `/admin/v1/games/${game.gameId}/products/gem_300`)).body;
    expect(p).toMatchObject({ product_id: 'gem_300', name: '300 gems', price: 3000, currency: 'CNY', active: true });
    await page.getByRole('row', { name: /gem_300/ }).getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('Price (minor units)').fill('2500');
    await page.getByRole('button', { name: 'Save product' }).click();
    await page.getByRole('cell', { name: '25.00 CNY' }).waitFor();
    expect((await admin(t, 'GET', `/admin/v1/games/${game.gameId}/products/gem_300`)).body.price).toBe(2500);
    await shot('products');
  });

  it('creates a partner (secret once), lists it and disables it', async () => {
    const game = await createGame(t);
    const partnerId = `p_${game.gameId}`;
    await go('/partners');
    await page.getByLabel('Partner id').fill(partnerId);
    await page.getByLabel('Name', { exact: true }).fill('Test partner');
    await page.getByLabel('Granted games').fill(game.gameId);
    await page.getByRole('button', { name: 'Create partner' }).click();
    expect(await page.getByTestId('secret-value').textContent()).toMatch(/^sk_/);
    await page.getByRole('link', { name: partnerId }).waitFor();
    await shot('partners');
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByTestId('partner-enabled').waitFor({ state: 'attached' });
    expect(await page.getByTestId('partner-enabled').isChecked()).toBe(true);
    await page.getByTestId('partner-enabled').click();
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/partners/${partnerId}`)).body.enabled).toBe(false);
    expect((await admin(t, 'GET', `/admin/v1/partners/${partnerId}`)).body.games).toEqual([game.gameId]);

    // Grant a second game, then revoke the first.
    const other = await createGame(t);
    await page.getByLabel('Game id to grant').fill(other.gameId);
    await page.getByRole('button', { name: 'Grant' }).click();
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/partners/${partnerId}`)).body.games).toEqual([game.gameId, other.gameId]);
    const first = page.getByRole('row', { name: new RegExp(`^${game.gameId}`) });
    await first.getByRole('button', { name: 'Revoke' }).click();
    await first.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/partners/${partnerId}`)).body.games).toEqual([other.gameId]);

    // A second key: its secret is shown once.
    await page.getByRole('button', { name: 'Create key' }).click();
    expect(await page.getByTestId('secret-value').textContent()).toMatch(/^sk_/);
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/partners/${partnerId}`)).body.key_ids.length).toBe(2);
  });

  it('returns to sign-in when the API answers 401', async () => {
    await go('/partners');
    await page.evaluate(() => sessionStorage.setItem('combo.console.token', 'revoked-token'));
    await page.reload();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem('combo.console.token'))).toBeNull();
    await signIn();
    await page.getByRole('heading', { name: 'Partners', exact: true }).waitFor();
  });

  /** A paid order whose ship_order notification failed (the receiver answers 500). */
  async function failedNotification(game: TestGame, path: string) {
    receiver.script(path, () => status(500, 'boom'));
    const { order, notificationId } = await paidOrder(t, game, receiver.url + path);
    await until(`notification ${notificationId} to fail`, async () => {
      const r = await admin(t, 'GET', `/admin/v1/notifications/${notificationId}`);
      return r.body.status === 'failed' ? r.body : null;
    });
    return { order, notificationId };
  }

  async function gameWithKeys(): Promise<TestGame> {
    const g = await createGame(t);
    keys.set(g.gameId, [g.secret]);
    return g;
  }

  it('lists failed notifications of a game and redelivers one', async () => {
    const game = await gameWithKeys();
    const { notificationId, order } = await failedNotification(game, `/n/${game.gameId}/one`);
    await go(`/notifications?game_id=${game.gameId}`);
    const row = page.getByRole('row', { name: new RegExp(notificationId) });
    await row.waitFor();
    expect(await row.textContent()).toContain('failed');
    expect(await row.textContent()).toContain(order.order_id);
    await shot('notifications');
    receiver.script(`/n/${game.gameId}/one`, () => ok());
    await row.getByRole('button', { name: 'Redeliver' }).click();
    await row.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/notifications/${notificationId}`)).body.status, { timeout: 15_000 }).toBe('succeeded');
  });

  it('redelivers every failed notification of a game since a time', async () => {
    const game = await gameWithKeys();
    const path = `/n/${game.gameId}/bulk`;
    const a = await failedNotification(game, path);
    const b = await failedNotification(game, path);
    receiver.script(path, () => ok());
    await go(`/notifications?game_id=${game.gameId}`);
    await page.getByRole('row', { name: new RegExp(b.notificationId) }).waitFor();
    await page.getByRole('button', { name: 'Redeliver all failed' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    expect(await page.getByTestId('bulk-result').textContent()).toBe('2 notifications queued for redelivery.');
    for (const id of [a.notificationId, b.notificationId]) {
      await expect.poll(async () => (await admin(t, 'GET', `/admin/v1/notifications/${id}`)).body.status, { timeout: 15_000 }).toBe('succeeded');
    }
  });

  const orderStatus = async (id: string) => (await admin(t, 'GET', `/admin/v1/orders/${id}`)).body.status;

  it('shows an order made by create-order in the list and its detail, and cancels it', async () => {
    const game = await gameWithKeys();
    const o = await createOrder(t, game, { notify_url: `${receiver.url}/n/${game.gameId}/cancel`, combo_id: 'c-cancel', reference_id: `ref-${game.gameId}` });
    await go(`/orders?game_id=${game.gameId}`);
    const row = page.getByRole('row', { name: new RegExp(o.order_id) });
    await row.waitFor();
    expect(await row.textContent()).toContain('created');
    expect(await row.textContent()).toContain('6.00 CNY');
    // Filters go to the API: another status finds nothing, the reference id finds it.
    await page.getByLabel('Status').selectOption('paid');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No orders match.').waitFor();
    await page.getByLabel('Status').selectOption('');
    await page.getByLabel('Reference id').fill(`ref-${game.gameId}`);
    await page.getByRole('button', { name: 'Search' }).click();
    await row.getByRole('link', { name: o.order_id }).click();
    await page.getByTestId('order-facts').waitFor();
    expect(await page.getByTestId('order-facts').textContent()).toContain('c-cancel');
    await page.getByRole('link', { name: 'open (pays this order)' }).waitFor();
    await page.getByRole('button', { name: 'Cancel order' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => orderStatus(o.order_id)).toBe('canceled');
    await page.getByRole('heading', { name: /canceled/ }).waitFor();
    await page.getByTestId('timeline').getByText('canceled').waitFor();
  });

  it('shows a paid order with its timeline, payment, notification attempts, and refunds it', async () => {
    const game = await gameWithKeys();
    const o = await createOrder(t, game, { notify_url: `${receiver.url}/n/${game.gameId}/paid` });
    expect((await pay(t, o.order_token)).status).toBe(200);
    await expect.poll(() => orderStatus(o.order_id), { timeout: 15_000 }).toBe('delivered');
    await go(`/orders/${o.order_id}`);
    const timeline = page.getByTestId('timeline');
    await timeline.waitFor();
    expect(await timeline.textContent()).toMatch(/created.*paid.*delivered/s);
    await page.getByRole('cell', { name: 'sandbox', exact: true }).waitFor();
    const note = page.getByTestId('notification').first();
    expect(await note.textContent()).toContain('ship_order');
    expect(await note.textContent()).toContain('succeeded');
    await note.getByRole('cell', { name: '200', exact: true }).waitFor();
    await shot('order');
    await page.getByRole('button', { name: 'Refund' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await expect.poll(() => orderStatus(o.order_id)).toBe('refunded');
    await page.getByTestId('notification').filter({ hasText: 'refund' }).waitFor();
  });

  it('a refund refused because the order was refunded meanwhile shows the order as it is now', async () => {
    const game = await gameWithKeys();
    const o = await createOrder(t, game, { notify_url: `${receiver.url}/n/${game.gameId}/refunded-elsewhere` });
    expect((await pay(t, o.order_token)).status).toBe(200);
    await go(`/orders/${o.order_id}`);
    await page.getByRole('heading', { name: /paid|delivered/ }).waitFor();
    expect((await admin(t, 'POST', `/admin/v1/orders/${o.order_id}/refund`, {})).status).toBe(200);
    await page.getByRole('button', { name: 'Refund' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.getByRole('alert').filter({ hasText: '409' }).waitFor();
    await page.getByRole('heading', { name: /refunded/ }).waitFor();
    expect(await page.getByRole('button', { name: 'Refund' }).count()).toBe(0);
  });

  it('pages through orders with Load more (cursor paging, 50 a page)', async () => {
    const game = await gameWithKeys();
    const made: string[] = [];
    for (let i = 0; i < 52; i++) made.push((await createOrder(t, game, { notify_url: `${receiver.url}/n/${game.gameId}/many` })).order_id);
    await go(`/orders?game_id=${game.gameId}`);
    const rows = page.getByTestId('orders-table').locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(50);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => rows.count()).toBe(52);
    await page.getByRole('button', { name: 'Load more' }).waitFor({ state: 'detached' });
    const shown = await page.getByTestId('orders-table').locator('tbody tr td:first-child').allTextContents();
    expect(shown).toEqual([...made].reverse());
  });

  it('lists sessions of a game', async () => {
    const game = await gameWithKeys();
    const r = await signed(t, game, 'POST', '/v1/server/enter-game', { combo_id: 'c-session', session_id: `s-${game.gameId}` });
    expect(r.status).toBe(200);
    await go(`/sessions?game_id=${game.gameId}`);
    const row = page.getByRole('row', { name: new RegExp(`s-${game.gameId}`) });
    await row.waitFor();
    expect(await row.textContent()).toContain('c-session');
    expect(await row.textContent()).toContain('open');
    await shot('sessions');
    // With a combo id too, the API adds the player's online time per Beijing day.
    await page.getByLabel('Combo id').fill('c-session');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('heading', { name: 'Online time of c-session per Beijing day' }).waitFor();
  });

  it('shows a 24-hour overview of one game', async () => {
    const game = await gameWithKeys();
    await failedNotification(game, `/n/${game.gameId}/overview-fail`);
    const good = await paidOrder(t, game, `${receiver.url}/n/${game.gameId}/overview-ok`);
    const succeeded = (id: string) =>
      until(`notification ${id} to succeed`, async () => {
        const r = await admin(t, 'GET', `/admin/v1/notifications/${id}`);
        return r.body.status === 'succeeded' ? r.body : null;
      });
    await succeeded(good.notificationId);
    // Refunded: paid back, so neither a paid order nor revenue.
    const refunded = await paidOrder(t, game, `${receiver.url}/n/${game.gameId}/overview-refunded`);
    await succeeded(refunded.notificationId);
    expect((await admin(t, 'POST', `/admin/v1/orders/${refunded.order.order_id}/refund`, {})).status).toBe(200);
    const refund = (await admin(t, 'GET', `/admin/v1/orders/${refunded.order.order_id}`)).body.notifications.find((n: { type: string }) => n.type === 'refund');
    await succeeded(refund.notification_id);
    // Created two days ago and failed: not in the 24 hours, but failed now, so counted.
    receiver.script(`/n/${game.gameId}/overview-old`, () => status(500, 'boom'));
    const old = await paidOrder(t, game, `${receiver.url}/n/${game.gameId}/overview-old`, { now: Date.now() - 2 * 86_400_000 });
    await until('the old notification to fail', async () => ((await admin(t, 'GET', `/admin/v1/notifications/${old.notificationId}`)).body.status === 'failed' ? true : null));
    await go(`/?game_id=${game.gameId}`);
    const tiles = page.getByTestId('overview-tiles');
    await tiles.waitFor();
    const tile = (label: string) => tiles.locator('.tile', { hasText: label }).locator('.tile-value').textContent();
    expect(await tile('Orders (24 h)')).toBe('3');
    expect(await tile('Paid orders')).toBe('2');
    expect(await tiles.locator('.tile', { hasText: 'Revenue' }).textContent()).toContain('sandbox: 24.00 CNY');
    // In the 24 hours: one failed, three succeeded (two ship_orders, one refund).
    expect(await tile('Delivery success')).toBe('75.0 %');
    expect(await tile('Failed')).toBe('2');
    expect(await tile('Backlog')).toBe('0');
    await shot('overview');
  });

  it('sign-in from an address locked out by wrong tokens shows why and when to retry, also for the right token', async () => {
    const strict = await startService({ env: { ADMIN_AUTH_FAILURES_PER_MINUTE: '1' } });
    try {
      await page.evaluate(() => sessionStorage.clear());
      await page.goto(`${strict.url}/console/`);
      await signIn('not-the-token');
      await page.getByRole('alert').getByText('401').waitFor();
      await page.getByLabel('Admin token').fill('');
      await signIn('still-not-the-token');
      await page.getByRole('alert').getByText('too many wrong admin tokens from this address; retry after 60 s').waitFor();
      await page.getByLabel('Admin token').fill('');
      const answered = page.waitForResponse((r) => new URL(r.url()).pathname.startsWith('/admin/'));
      await signIn();
      expect((await answered).status()).toBe(429);
      await page.getByRole('button', { name: 'Sign in with the token' }).waitFor();
      await page.getByRole('alert').getByText(/too many wrong admin tokens from this address; retry after \d+ s/).waitFor();
      expect(await page.evaluate(() => sessionStorage.getItem('combo.console.token'))).toBeNull();
    } finally {
      await strict.stop();
    }
  });

  it('ran without script errors or CSP refusals', () => {
    expect(problems).toEqual([]);
  });
});
