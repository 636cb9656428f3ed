import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { client, createOrder, notificationsOf, pay, paymentsOf, statusOf, type CreatedOrder } from './helpers/orders.js';

let t: TestService;
let game: TestGame;
let order: CreatedOrder;
beforeAll(async () => {
  t = await startService();
  game = await createGame(t);
  order = await createOrder(t, game, { quantity: 2 });
});
afterAll(async () => t?.stop());

const view = (body: unknown) => client(t, '/v1/client/order', body);

/** Tokens that must all be refused alike: unknown, forged, tampered, malformed. */
function badTokens(o: CreatedOrder): Record<string, string> {
  const [, id, secret] = /^ot_(\d+)_(.+)$/.exec(o.order_token)!;
  const flip = (c: string) => (c === 'A' ? 'B' : 'A');
  return {
    'unknown order': `ot_${BigInt(id!) + 1n}_${secret}`,
    'forged secret': `ot_${id}_${'x'.repeat(32)}`,
    'tampered last char': o.order_token.slice(0, -1) + flip(o.order_token.slice(-1)),
    'secret too short': `ot_${id}_${secret!.slice(1)}`,
    'no prefix': `${id}_${secret}`,
    garbage: 'hello',
    'max length': 'x'.repeat(1024),
  };
}

describe('POST /v1/client/order', () => {
  it('answers the order behind the token', async () => {
    const r = await view({ order_token: order.order_token });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-trace-id')).toBeTruthy();
    expect(r.body).toEqual({
      order_id: order.order_id,
      product_id: 'gem_60',
      product_name: '60 gems',
      quantity: 2,
      amount: 1200,
      currency: 'CNY',
      status: 'created',
      expires_at: order.expires_at,
    });
  });

  it('needs no signature and ignores an Authorization header', async () => {
    const r = await client(t, '/v1/client/order', { order_token: order.order_token }, { authorization: 'Bearer nonsense' });
    expect(r.status).toBe(200);
  });

  it('401 invalid_token for unknown, forged, tampered and malformed tokens, on both endpoints', async () => {
    for (const [what, token] of Object.entries(badTokens(order))) {
      const a = await view({ order_token: token });
      expect([what, a.status, a.body?.error]).toEqual([what, 401, 'invalid_token']);
      const b = await pay(t, token);
      expect([what, b.status, b.body?.error]).toEqual([what, 401, 'invalid_token']);
    }
    expect(await statusOf(t, order.order_id)).toBe('created');
  });

  it('a token of another order does not open this one', async () => {
    const other = await createOrder(t, game);
    const otherSecret = other.order_token.split('_')[2];
    const r = await view({ order_token: `ot_${order.order_id}_${otherSecret}` });
    expect(r.status).toBe(401);
  });

  it.each([
    ['missing order_token', {}],
    ['order_token a number', { order_token: 5 }],
    ['order_token null', { order_token: null }],
    ['order_token empty (min-1)', { order_token: '' }],
    ['order_token 1025 chars (max+1)', { order_token: 'x'.repeat(1025) }],
  ])('400 invalid_request: %s', async (_what, body) => {
    const r = await view(body);
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect(r.body.message).toContain('order_token');
  });

  it('400 for a body that is not a JSON object; 415 for another media type; 405 for GET', async () => {
    expect((await view('{"order_token":')).status).toBe(400);
    expect((await view('[]')).status).toBe(400);
    expect((await view('')).status).toBe(400);
    const r = await fetch(`${t.url}/v1/client/order`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' });
    expect(r.status).toBe(415);
    const g = await fetch(`${t.url}/v1/client/order`);
    expect(g.status).toBe(405);
  });
});

describe('POST /v1/client/pay', () => {
  it('pays with sandbox and answers the paid order', async () => {
    const o = await createOrder(t, game);
    const r = await pay(t, o.order_token);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      order_id: o.order_id,
      product_id: 'gem_60',
      product_name: '60 gems',
      quantity: 1,
      amount: 600,
      currency: 'CNY',
      status: 'paid',
      expires_at: o.expires_at,
    });
  });

  it('403 channel_unavailable when the game does not allow sandbox payments; nothing stored', async () => {
    const g = await createGame(t, { sandbox_payments: false });
    const o = await createOrder(t, g);
    const r = await pay(t, o.order_token);
    expect(r.status).toBe(403);
    expect(r.body.error).toBe('channel_unavailable');
    expect(await statusOf(t, o.order_id)).toBe('created');
    expect(await paymentsOf(t, o.order_id)).toHaveLength(0);
    expect(await notificationsOf(t, o.order_id)).toHaveLength(0);
    // Allowed again by the operator: paying works.
    expect((await admin(t, 'PATCH', `/admin/v1/games/${g.gameId}`, { sandbox_payments: true })).status).toBe(200);
    expect((await pay(t, o.order_token)).body.status).toBe('paid');
  });

  it('403 channel_unavailable for a well-formed channel the service does not offer (32 chars, max)', async () => {
    const o = await createOrder(t, game);
    for (const channel of ['alipay', 'a'.repeat(32), 'a']) {
      const r = await pay(t, o.order_token, channel);
      expect([channel, r.status, r.body.error]).toEqual([channel, 403, 'channel_unavailable']);
    }
  });

  it('checks the order\'s state before the channel: a paid order answers 200 and a canceled one 409, whatever the channel', async () => {
    const paid = await createOrder(t, game);
    expect((await pay(t, paid.order_token)).body.status).toBe('paid');
    const again = await pay(t, paid.order_token, 'alipay');
    expect([again.status, again.body.status]).toEqual([200, 'paid']);
    const canceled = await createOrder(t, game);
    expect((await admin(t, 'POST', `/admin/v1/orders/${canceled.order_id}/cancel`)).status).toBe(200);
    const refused = await pay(t, canceled.order_token, 'alipay');
    expect([refused.status, refused.body.error]).toEqual([409, 'invalid_state']);
    expect(await paymentsOf(t, canceled.order_id)).toHaveLength(0);
  });

  it.each([
    ['missing channel', (tok: string) => ({ order_token: tok })],
    ['channel empty (min-1)', (tok: string) => ({ order_token: tok, channel: '' })],
    ['channel 33 chars (max+1)', (tok: string) => ({ order_token: tok, channel: 'a'.repeat(33) })],
    ['channel upper case', (tok: string) => ({ order_token: tok, channel: 'Sandbox' })],
    ['channel a number', (tok: string) => ({ order_token: tok, channel: 1 })],
    ['missing order_token', () => ({ channel: 'sandbox' })],
    ['order_token 1025 chars', () => ({ order_token: 'x'.repeat(1025), channel: 'sandbox' })],
  ])('400 invalid_request: %s', async (_what, make) => {
    const o = await createOrder(t, game);
    const r = await client(t, '/v1/client/pay', make(o.order_token));
    expect(r.status).toBe(400);
    expect(r.body.error).toBe('invalid_request');
    expect(await statusOf(t, o.order_id)).toBe('created');
  });
});

describe('GET /checkout/<order_token> with a token that is not valid', () => {
  const tokens = () => Object.entries(badTokens(order)).filter(([what]) => what !== 'max length');

  it('a browser (Accept: text/html) gets a 401 HTML page', async () => {
    const accept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    for (const [what, token] of tokens()) {
      const r = await fetch(`${t.url}/checkout/${encodeURIComponent(token)}`, { headers: { accept } });
      expect([what, r.status], what).toEqual([what, 401]);
      expect(r.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await r.text()).toContain('not valid');
    }
  });

  it.each([
    ['no Accept header', undefined],
    ['Accept: */*', '*/*'],
    ['Accept: application/json', 'application/json'],
    ['HTML refused (q=0)', 'application/json, text/html;q=0'],
    ['JSON preferred over HTML', 'application/json;q=1, text/html;q=0.1'],
  ])('anything else (%s) gets the ErrorResponse 401 invalid_token (rest-interface 1.6)', async (_n, accept) => {
    for (const [what, token] of tokens()) {
      const r = await fetch(`${t.url}/checkout/${encodeURIComponent(token)}`, { headers: accept ? { accept } : {} });
      expect([what, r.status], what).toEqual([what, 401]);
      expect(r.headers.get('content-type')).toMatch(/^application\/json/);
      expect(r.headers.get('x-trace-id')).toBeTruthy();
      expect((await r.json()).error).toBe('invalid_token');
    }
  });
});
