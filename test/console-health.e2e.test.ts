import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrder } from './helpers/orders.js';
import type { Page } from 'playwright-core';
import { haveChromium, openSignedInConsole, pageOverflow, type ConsoleBrowser } from './helpers/console-browser.js';
import { notificationRow, paidOrder } from './helpers/paid-orders.js';
import { Receiver, ok, status, until } from './helpers/receiver.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';

// Delivery health in the console (operators.md 3), the game switcher, search across games, the
// CSV export and the phone layout, in a real headless Chromium. Retries are 5 to 10 minutes apart (base 10 minutes): a notification
// whose receiver answers 500 stays `failing` while the file runs, unless retried now.

describe.skipIf(!haveChromium)('console: delivery health, game switcher, search, CSV export, phone width', () => {
  let t: TestService;
  let browser: ConsoleBrowser;
  let page: Page;
  let receiver: Receiver;
  const keys = new Map<string, string[]>();
  const go = (p: string) => page.goto(`${t.url}/console${p}`);

  beforeAll(async () => {
    receiver = await new Receiver({ keys, now: () => Date.now() }).start();
    t = await startService({ env: { NOTIFY_RETRY_BASE_MS: '600000' } });
    browser = await openSignedInConsole(t.url);
    page = browser.page;
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await t?.stop();
    await receiver?.close();
  });

  /** A game with `n` notifications failing (their receiver answers 500 until `recover`). */
  async function failingGame(n: number): Promise<{ g: TestGame; path: string; ids: string[]; recover: () => void }> {
    const g = await createGame(t);
    keys.set(g.gameId, [g.secret]);
    const path = `/n/${g.gameId}`;
    let up = false;
    receiver.script(path, () => (up ? ok() : status(500, 'down')));
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await paidOrder(t, g, receiver.url + path)).notificationId);
    for (const id of ids) await until(`${id} attempted`, async () => (await notificationRow(t, id)).attempts > 0);
    return { g, path, ids, recover: () => (up = true) };
  }

  const tile = (label: string) => page.getByTestId('overview-tiles').locator('.tile', { hasText: label }).locator('.tile-value').textContent();

  it('counts failing notifications on the overview as the admin API does, and retries them now', async () => {
    const { g, path, ids, recover } = await failingGame(2);
    await go(`/?game_id=${g.gameId}`);
    await page.getByTestId('delivery-health').waitFor();
    const health = (await admin(t, 'GET', `/admin/v1/games/${g.gameId}/delivery-health`)).body;
    const listed = (await admin(t, 'GET', `/admin/v1/notifications?game_id=${g.gameId}&status=failing`)).body.data.length;
    expect(health.hosts[0].undelivered).toEqual({ pending: 0, failing: 2, failed: 0 });
    expect(await tile('Failing')).toBe(String(listed));
    expect(await tile('Failing')).toBe('2');
    expect(await tile('Failed')).toBe('0');
    expect(await tile('Backlog')).toBe('0');
    const row = page.getByTestId('delivery-health').getByRole('row', { name: new RegExp(health.hosts[0].host) });
    expect(await row.textContent()).toContain('0.0 % of 2');
    expect(await row.textContent()).toContain('HTTP 500');
    await browser.shot('overview-delivery-health');

    recover();
    const arrivals = [receiver.arrival(path), receiver.arrival(path)];
    await page.getByRole('button', { name: 'Retry all failing now' }).click();
    await page.getByTestId('retry-result').getByText('2 failing notifications sent now.').waitFor();
    await Promise.all(arrivals);
    for (const id of ids) await until(`${id} delivered`, async () => (await notificationRow(t, id)).status === 'succeeded');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByTestId('delivery-health').getByRole('row', { name: /100\.0 % of 2|50\.0 % of 4/ }).waitFor();
    expect(await tile('Failing')).toBe('0');
  });

  it('keeps the notification filters in the URL (reload, back), and retries one now', async () => {
    const { g, path, ids, recover } = await failingGame(1);
    await go(`/notifications?game_id=${g.gameId}&status=failing`);
    await page.getByRole('heading', { name: 'Failing notifications', exact: true }).waitFor();
    const row = page.getByRole('row', { name: new RegExp(ids[0] as string) });
    await row.waitFor();
    expect(await row.textContent()).toContain('failing');
    await page.reload();
    await row.waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('failing');

    await page.getByLabel('Status').selectOption('failed');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('heading', { name: 'Failed notifications', exact: true }).waitFor();
    expect(new URL(page.url()).searchParams.get('status')).toBe('failed');
    await page.goBack();
    await page.getByRole('heading', { name: 'Failing notifications', exact: true }).waitFor();
    expect(await page.getByLabel('Status').inputValue()).toBe('failing');

    recover();
    const arrival = receiver.arrival(path);
    await row.getByRole('button', { name: 'Retry now' }).click();
    expect((await arrival).body.notification_id).toBe(ids[0]);
    await until('delivered', async () => (await notificationRow(t, ids[0] as string)).status === 'succeeded');
  });

  it('offers the games instead of an empty field, and remembers the one chosen', async () => {
    const g = await createGame(t);
    await page.evaluate(() => localStorage.clear());
    await go('/');
    const choice = page.getByTestId('game-choices').getByRole('button', { name: new RegExp(g.gameId) });
    await choice.click();
    await page.getByRole('heading', { name: new RegExp(`Overview ${g.gameId}`) }).waitFor();
    await go('/');
    await page.getByRole('heading', { name: new RegExp(`Overview ${g.gameId}`) }).waitFor();
  });

  it('finds orders of any game by order id, reference id or player; exports a listing as CSV', async () => {
    const a = await createGame(t);
    const b = await createGame(t);
    const player = `player-${a.gameId}`;
    const first = await createOrder(t, a, { combo_id: player, reference_id: `ref-a-${a.gameId}` });
    await createOrder(t, b, { combo_id: player, reference_id: `ref-b-${b.gameId}` });
    const results = page.getByTestId('search-results').locator('tbody tr');

    await go('/search');
    await page.getByLabel('Order id, reference id or player (combo id)').fill(player);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('heading', { name: '2 orders found (at most 50 per field)' }).waitFor();
    expect(new URL(page.url()).searchParams.get('q')).toBe(player);
    expect((await results.allTextContents()).map((r) => r.includes(a.gameId) || r.includes(b.gameId))).toEqual([true, true]);
    await page.reload();
    await page.getByRole('heading', { name: '2 orders found (at most 50 per field)' }).waitFor();

    await go(`/search?q=ref-b-${b.gameId}`);
    await page.getByRole('heading', { name: '1 order found (at most 50 per field)' }).waitFor();
    expect(await results.first().textContent()).toMatch(/reference id$/);
    await go(`/search?q=${first.order_id}`);
    await page.getByRole('heading', { name: '1 order found (at most 50 per field)' }).waitFor();
    expect(await results.first().textContent()).toMatch(/order id$/);
    await page.goBack();
    await page.getByRole('heading', { name: '1 order found (at most 50 per field)' }).waitFor();
    expect(await results.first().textContent()).toMatch(/reference id$/);

    await go(`/orders?game_id=${a.gameId}`);
    await page.getByTestId('orders-table').locator('tbody tr').first().waitFor();
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Export CSV' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toMatch(new RegExp(`^orders-${a.gameId}-\\d{4}-\\d{2}-\\d{2}\\.csv$`));
    const text = readFileSync(await file.path(), 'utf8');
    expect(text.split('\r\n')[0]).toMatch(/^order_id,game_id,status,reference_id,combo_id,/);
    expect(text).toContain(`${first.order_id},${a.gameId},created,ref-a-${a.gameId},${player},`);
  });

  it('fits a 390 px wide phone: the page never scrolls sideways, tables scroll in their box', async () => {
    const { g } = await failingGame(1);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const [name, p, ready] of [
        ['overview', `/?game_id=${g.gameId}`, 'delivery-health'],
        ['notifications', `/notifications?game_id=${g.gameId}&status=failing`, 'notifications-table'],
        ['orders', `/orders?game_id=${g.gameId}`, 'orders-table'],
      ] as const) {
        await go(p);
        await page.getByTestId(ready).locator('tbody tr').first().waitFor();
        expect(await pageOverflow(page), name).toBe(0);
        const box = page.getByTestId(ready).locator('xpath=..');
        expect(await box.evaluate((el) => el.scrollWidth > el.clientWidth && getComputedStyle(el).overflowX === 'auto'), name).toBe(true);
        await browser.shot(`${name}-390`);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
    await go(`/?game_id=${g.gameId}`);
    await page.getByTestId('delivery-health').waitFor();
    await browser.shot('overview-desktop');
  });

  it('ran without script errors or CSP refusals', () => {
    expect(browser.problems).toEqual([]);
  });
});
