import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';
import { beijingDate, beijingDayStart } from '../src/lib/beijing-time.js';
import { ManualClock } from '../src/lib/clock.js';
import { AlipayFixture } from './helpers/alipay-service.js';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { WechatPayStandIn } from './helpers/wechatpay.js';

/**
 * The scheduled reconciliation (payments.md 6): from RECONCILE_HOUR (Beijing time) the
 * previous day is reconciled once for every game's enabled wechat and alipay channel, a run
 * whose statement could not be had is tried again an hour later. The service runs on a manual
 * clock and the test triggers the schedule's pass (runOnce), against the WeChat Pay and Alipay
 * stand-ins.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const D = beijingDayStart(Date.UTC(2026, 10, 10));
const clock = new ManualClock(D + 12 * HOUR);
const f = new AlipayFixture(clock);
const wx = new WechatPayStandIn(() => clock.now());
let t: TestService;
const games: Record<'alipay' | 'wechat' | 'both' | 'disabled' | 'none', TestGame> = {} as never;

beforeAll(async () => {
  await wx.start();
  await f.start({ WECHATPAY_BASE_URL: wx.url, SWEEP_INTERVAL_MS: '600000', RECONCILE_HOUR: '10' });
  t = f.t;
  const wechat = async (g: TestGame, enabled = true) => expect((await admin(t, 'PUT', `/admin/v1/games/${g.gameId}/channels/wechat`, wx.settings({ enabled }))).status).toBe(200);
  games.alipay = await f.game();
  games.wechat = await createGame(t);
  await wechat(games.wechat);
  games.both = await f.game();
  await wechat(games.both);
  games.disabled = await createGame(t);
  await wechat(games.disabled, false);
  expect((await admin(t, 'PUT', `/admin/v1/games/${games.disabled.gameId}/channels/alipay`, f.settings(f.app, { enabled: false }))).status).toBe(200);
  games.none = await createGame(t);
});
afterAll(async () => {
  await f.stop();
  await wx.close();
});

const runOnce = () => t.service.reconciliationSchedule.runOnce();

/** The scheduled reconciliations of `date`: "<game>/<channel> <status>" each, sorted. */
async function scheduled(date: string): Promise<string[]> {
  const r = await admin(t, 'GET', '/admin/v1/reconciliations?limit=200');
  expect(r.status).toBe(200);
  const name = (id: string) => Object.entries(games).find(([, g]) => g.gameId === id)?.[0] ?? id;
  return r.body.data
    .filter((x: any) => x.date === date && x.actor === 'schedule')
    .map((x: any) => `${name(x.game_id)}/${x.channel} ${x.status}`)
    .sort();
}

describe('the scheduled reconciliation of the previous day', () => {
  it('runs from RECONCILE_HOUR (Beijing time), once per game, channel and day, by one pass at a time; a failed one an hour later', async () => {
    const date = beijingDate(D);
    clock.set(D + DAY + 10 * HOUR - 1);
    expect(await runOnce()).toEqual({ date: null, runs: 0 });

    clock.set(D + DAY + 10 * HOUR);
    f.alipay.bills.set(date, []);
    f.alipay.failDownloads = 1;
    // Two passes at once (as two instances would): each pair is taken by one of them.
    const [a, b] = await Promise.all([runOnce(), runOnce()]);
    expect(a.date).toBe(date);
    expect(a.runs + b.runs).toBe(4);
    const first = await scheduled(date);
    expect(first.filter((x) => x.endsWith('failed'))).toHaveLength(1);
    expect(first.map((x) => x.split(' ')[0]).sort()).toEqual(['alipay/alipay', 'both/alipay', 'both/wechat', 'wechat/wechat']);
    expect(first.filter((x) => x.startsWith('both/wechat') || x.startsWith('wechat/'))).toEqual(['both/wechat matched', 'wechat/wechat matched']);

    // Done is done; the failed one waits its hour.
    expect((await runOnce()).runs).toBe(0);
    clock.advance(HOUR - 1);
    expect((await runOnce()).runs).toBe(0);
    clock.advance(1);
    expect((await runOnce()).runs).toBe(1);
    const after = await scheduled(date);
    expect(after).toHaveLength(5);
    expect(after.filter((x) => x.endsWith('matched'))).toHaveLength(4);
    clock.advance(HOUR);
    expect((await runOnce()).runs).toBe(0);

    // The next day is the next day's.
    clock.set(D + 2 * DAY + 10 * HOUR);
    expect(await runOnce()).toEqual({ date: beijingDate(D + DAY), runs: 4 });
    expect(await runOnce()).toEqual({ date: beijingDate(D + DAY), runs: 0 });
    const rows = await t.service.database.db.selectFrom('reconciliation_schedule').selectAll().where('date', '=', date).execute();
    expect(rows.map((r) => [r.state, Number(r.attempts)]).sort()).toEqual([
      ['done', 1],
      ['done', 1],
      ['done', 1],
      ['done', 2],
    ]);
  });

  it('leaves out a game whose channel was removed', async () => {
    clock.set(D + 3 * DAY + 11 * HOUR);
    const g = await f.game();
    expect((await admin(t, 'DELETE', `/admin/v1/games/${g.gameId}/channels/alipay`)).status).toBe(200);
    expect(await runOnce()).toEqual({ date: beijingDate(D + 2 * DAY), runs: 4 });
  });

  it('RECONCILE_SCHEDULE=off leaves it out of the background jobs; bad settings are refused by name', async () => {
    expect(t.service.jobs).toContain(t.service.reconciliationSchedule);
    const off = await startService({ env: { RECONCILE_SCHEDULE: 'off' } });
    try {
      expect(off.service.jobs).not.toContain(off.service.reconciliationSchedule);
    } finally {
      await off.stop();
    }
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig({ ADMIN_TOKEN: 'reconcile-schedule-test-token', DATA_DIR: os.tmpdir(), ...env });
        return [];
      } catch (e) {
        return (e as ConfigError).problems;
      }
    };
    expect(problems({ RECONCILE_SCHEDULE: 'no' })).toEqual(['RECONCILE_SCHEDULE must be one of on, off (got "no")']);
    expect(problems({ RECONCILE_HOUR: '24' })).toEqual(['RECONCILE_HOUR must be an integer from 0 to 23 (got "24")']);
  });
});

