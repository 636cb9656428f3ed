import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/lib/clock.js';
import { admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

const bj = (s: string) => Date.parse(`${s}+08:00`);
const NOW = bj('2026-11-20T12:00:00');
const PI = '1fffbjzos82bs9cnyj1dna7d6d29zg4esnh99u';

describe('players and minors\' spending limits (PROTOCOL 12)', () => {
  let t: TestService;
  const clock = new ManualClock(NOW);
  beforeAll(async () => {
    t = await startService({ clock });
  });
  afterAll(async () => t?.stop());

  async function gameWithProducts(): Promise<TestGame> {
    const game = await createGame(t);
    for (const [id, price, currency] of [
      ['p1', 1, 'CNY'],
      ['p3000', 3000, 'CNY'],
      ['p5000', 5000, 'CNY'],
      ['p5001', 5001, 'CNY'],
      ['p10000', 10000, 'CNY'],
      ['p10001', 10001, 'CNY'],
      ['usd', 100000, 'USD'],
    ] as const) {
      const r = await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/products/${id}`, { name: id, price, currency });
      expect(r.status).toBe(200);
    }
    return game;
  }
  const putPlayer = (game: TestGame, comboId: string, body: unknown) => admin(t, 'PUT', `/admin/v1/games/${game.gameId}/players/${comboId}`, body);
  const order = (game: TestGame, comboId: string, productId: string, quantity = 1) =>
    signed(t, game, 'POST', '/v1/server/create-order', orderBody({ combo_id: comboId, product_id: productId, quantity }));
  const expectLimited = (r: { status: number; body: any }, remaining: number) => {
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('recharge_limit_exceeded');
    expect(r.body.message).toContain(`${remaining} remains this month`);
  };

  it('validates the player body field by field', async () => {
    const game = await createGame(t);
    const cases: [unknown, number][] = [
      [{ pi: PI }, 200],
      [{ pi: PI.slice(0, 37) }, 400],
      [{ pi: `${PI}a` }, 400],
      [{ pi: `${PI.slice(0, 37)}-` }, 400],
      [{ pi: null }, 200],
      [{ birth_date: '2016-02-29' }, 200],
      [{ birth_date: '2015-02-29' }, 400],
      [{ birth_date: '2016-13-01' }, 400],
      [{ birth_date: '2016-1-01' }, 400],
      [{ birth_date: '2026-11-20' }, 200],
      [{ birth_date: '2026-11-21' }, 400],
      [{ birth_date: null }, 200],
      [{ banned: 'yes' }, 400],
      [{ banned: 1 }, 400],
      [{ banned: false }, 200],
      [{}, 200],
    ];
    for (const [body, status] of cases) {
      const r = await putPlayer(game, 'v1', body);
      expect([body, r.status]).toEqual([body, status]);
      if (status === 400) expect(r.body.error).toBe('invalid_request');
    }
    expect((await admin(t, 'PUT', '/admin/v1/games/nope/players/x', { banned: true })).status).toBe(404);
    expect((await admin(t, 'GET', '/admin/v1/games/nope/players/x')).status).toBe(404);
    expect((await admin(t, 'PUT', `/admin/v1/games/${game.gameId}/players/${'c'.repeat(65)}`, {})).status).toBe(400);
  });

  it('keeps absent fields, clears null ones, and reports ct and age', async () => {
    const game = await createGame(t);
    await putPlayer(game, 'm1', { pi: PI, birth_date: '2016-11-20' });
    const r = await putPlayer(game, 'm1', { banned: true });
    expect(r.body).toMatchObject({ recorded: true, pi: PI, birth_date: '2016-11-20', banned: true, age: 10, nppa_ct: 0, limits: { per_order: 5000, per_month: 20000 } });
    const c = await putPlayer(game, 'm1', { pi: null, banned: false });
    expect(c.body).toMatchObject({ pi: null, birth_date: '2016-11-20', banned: false, nppa_ct: 2 });
    // null clears banned too (docs/api.md: "null clears").
    await putPlayer(game, 'm1', { banned: true });
    const d = await putPlayer(game, 'm1', { banned: null, birth_date: null });
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({ banned: false, birth_date: null });
  });

  it('refuses create-order for a banned player (403 account_banned), whatever the currency', async () => {
    const game = await gameWithProducts();
    await putPlayer(game, 'bad', { banned: true });
    for (const p of ['p1', 'usd']) {
      const r = await order(game, 'bad', p);
      expect(r.status).toBe(403);
      expect(r.body.error).toBe('account_banned');
    }
    await putPlayer(game, 'bad', { banned: false });
    expect((await order(game, 'bad', 'p1')).status).toBe(200);
  });

  it('applies the age brackets at their bounds (birthdays on Beijing dates)', async () => {
    const game = await gameWithProducts();
    const cases: [string, string, number][] = [
      ['2018-11-21', 'p1', 403], // 7 until tomorrow: no payment at all
      ['2018-11-20', 'p5000', 200], // 8 today
      ['2018-11-20', 'p5001', 403],
      ['2010-11-21', 'p5001', 403], // 15
      ['2010-11-20', 'p10000', 200], // 16
      ['2010-11-20', 'p10001', 403],
      ['2008-11-21', 'p10001', 403], // 17
      ['2008-11-20', 'p10001', 200], // 18: not limited
    ];
    let n = 0;
    for (const [birth, product, status] of cases) {
      const combo = `age-${n++}`;
      await putPlayer(game, combo, { birth_date: birth });
      const r = await order(game, combo, product);
      expect([birth, product, r.status]).toEqual([birth, product, status]);
      if (status === 403) expect(r.body.error).toBe('recharge_limit_exceeded');
    }
    expect((await order(game, 'age-0', 'p1')).body.message).toMatch(/under 8/);
  });

  it('counts payments in the Beijing month they are made and every unexpired open order, and says what remains', async () => {
    clock.set(NOW);
    const game = await gameWithProducts();
    await putPlayer(game, 'kid', { birth_date: '2016-01-01' }); // 10
    for (let i = 0; i < 3; i++) expect((await order(game, 'kid', 'p5000')).status).toBe(200);
    // one of them paid (as a payment would), one still open, one expired later
    const rows = await t.service.database.db.selectFrom('orders').select('order_id').where('game_id', '=', game.gameId).orderBy('order_id').execute();
    await t.service.database.db.updateTable('orders').set({ status: 'paid', paid_at: clock.now() }).where('order_id', '=', rows[0]!.order_id).execute();
    expect((await order(game, 'kid', 'p3000')).status).toBe(200); // 18000
    expectLimited(await order(game, 'kid', 'p3000'), 2000);
    // USD orders are not limited
    expect((await order(game, 'kid', 'usd')).status).toBe(200);
    let p = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/kid`);
    expect(p.body.spending).toEqual({ month: '2026-11', currency: 'CNY', paid: 5000, reserved: 13000, remaining: 2000 });
    // created orders stop counting when they expire (default lifetime 1800 s)
    clock.advance(1801_000);
    p = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/kid`);
    expect(p.body.spending).toMatchObject({ paid: 5000, reserved: 0, remaining: 15000 });
    expect((await order(game, 'kid', 'p5000')).status).toBe(200);
    // a new Beijing month starts at Beijing midnight
    clock.set(bj('2026-11-30T23:59:59')); // only the paid order still counts
    expectLimited(await order(game, 'kid', 'p5000', 3), 15000); // over the per-payment limit
    for (let i = 0; i < 3; i++) expect((await order(game, 'kid', 'p5000')).status).toBe(200);
    expectLimited(await order(game, 'kid', 'p1'), 0);
    // In December November's payment no longer counts, but the three orders created a second
    // before midnight are still open: paid now, they would be December's payments.
    clock.set(bj('2026-12-01T00:00:00'));
    expect((await order(game, 'kid', 'p5000')).status).toBe(200);
    expectLimited(await order(game, 'kid', 'p1'), 0);
    p = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/kid`);
    expect(p.body.spending).toEqual({ month: '2026-12', currency: 'CNY', paid: 0, reserved: 20000, remaining: 0 });
    // A payment counts in the month it is made, whenever its order was created.
    const lateNovember = await t.service.database.db
      .selectFrom('orders')
      .select('order_id')
      .where('game_id', '=', game.gameId)
      .where('created_at', '=', bj('2026-11-30T23:59:59'))
      .orderBy('order_id')
      .execute();
    expect(lateNovember).toHaveLength(3);
    await t.service.database.db.updateTable('orders').set({ status: 'paid', paid_at: clock.now() }).where('order_id', '=', lateNovember[0]!.order_id).execute();
    p = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/kid`);
    expect(p.body.spending).toMatchObject({ paid: 5000, reserved: 15000, remaining: 0 });
    // Once the open ones expire, December's payment is what is left of the month's 20000.
    clock.set(bj('2026-12-01T00:30:00'));
    p = await admin(t, 'GET', `/admin/v1/games/${game.gameId}/players/kid`);
    expect(p.body.spending).toMatchObject({ paid: 5000, reserved: 0, remaining: 15000 });
    expectLimited(await order(game, 'kid', 'p5000', 4), 15000);
    clock.set(NOW);
  });

  it('lets exactly 6 of 10 concurrent 3000 orders of a 10-year-old through (20000 a month)', async () => {
    clock.set(NOW);
    const game = await gameWithProducts();
    await putPlayer(game, 'racer', { birth_date: '2016-01-01' });
    const answers = await Promise.all(Array.from({ length: 10 }, () => order(game, 'racer', 'p3000')));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(6);
    const refused = answers.filter((a) => a.status !== 200);
    expect(refused).toHaveLength(4);
    for (const r of refused) expectLimited(r, 2000);
    const count = await t.service.database.db
      .selectFrom('orders')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('game_id', '=', game.gameId)
      .where('combo_id', '=', 'racer')
      .executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(6);
  });
});
