import http2 from 'node:http2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizationHeader, formatTimestamp } from '../src/signing/signer.js';
import { ADMIN_TOKEN, admin, createGame, startService, type TestGame, type TestService } from './helpers/service.js';
import { createPartner, partnerGet, queryUri, type TestPartner } from './helpers/partners.js';
import { head, rawRequest } from './helpers/raw.js';

let t: TestService;
beforeAll(async () => {
  t = await startService();
});
afterAll(async () => t?.stop());

const newId = (p: string) => `${p}${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;

describe('operator API: partners', () => {
  it('creates a partner (201) with a generated secret shown only once', async () => {
    const game = await createGame(t);
    const id = newId('p');
    const r = await admin(t, 'POST', '/admin/v1/partners', { partner_id: id, name: 'Partner A', games: [game.gameId] });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({
      partner_id: id,
      name: 'Partner A',
      enabled: true,
      games: [game.gameId],
      rate_limit_per_second: 100,
      key_ids: [r.body.key_id],
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
      key_id: expect.stringMatching(/^key_/),
      secret_key: expect.stringMatching(/^sk_[0-9A-Za-z]{43}$/),
    });
    const g = await admin(t, 'GET', `/admin/v1/partners/${id}`);
    expect(g.status).toBe(200);
    expect(g.body.secret_key).toBeUndefined();
    expect(g.body.games).toEqual([game.gameId]);
    // Sealed at rest: the stored value is not the secret.
    const rows = await t.service.database.db.selectFrom('partner_keys').select('secret_enc').where('partner_id', '=', id).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.secret_enc).not.toContain(r.body.secret_key.slice(3));
    const audit = await t.service.database.db.selectFrom('audit_log').selectAll().where('target', '=', id).execute();
    expect(audit.map((a) => a.action)).toEqual(['partner.create']);
    expect(audit[0]!.detail).not.toContain(r.body.secret_key);
  });

  it('accepts a given secret_key, enabled=false and a rate limit', async () => {
    const id = newId('p');
    const secret = 'sk_given_secret_0123456789';
    const r = await admin(t, 'POST', '/admin/v1/partners', { partner_id: id, name: 'B', games: [], enabled: false, rate_limit_per_second: 5, secret_key: secret });
    expect(r.status).toBe(201);
    expect([r.body.enabled, r.body.rate_limit_per_second, r.body.secret_key]).toEqual([false, 5, secret]);
  });

  it('refuses bad bodies: unknown game, duplicates, bounds', async () => {
    const game = await createGame(t);
    const base = { name: 'X', games: [game.gameId] };
    const post = (b: Record<string, unknown>) => admin(t, 'POST', '/admin/v1/partners', b);
    const unknown = await post({ ...base, partner_id: newId('p'), games: [game.gameId, 'no-such-game'] });
    expect([unknown.status, unknown.body.error]).toEqual([400, 'invalid_request']);
    expect(unknown.body.message).toContain('no-such-game');
    expect((await post({ ...base, partner_id: newId('p'), games: [game.gameId, game.gameId] })).status).toBe(400);
    expect((await post({ name: 'X', partner_id: newId('p') })).status).toBe(400);
    expect((await post({ ...base, partner_id: '' })).status).toBe(400);
    expect((await post({ ...base, partner_id: 'a,b' })).status).toBe(400);
    expect((await post({ ...base, partner_id: 'p'.repeat(65) })).status).toBe(400);
    expect((await post({ ...base, partner_id: newId('p'), rate_limit_per_second: 0 })).status).toBe(400);
    expect((await post({ ...base, partner_id: newId('p'), name: '' })).status).toBe(400);
    expect((await post({ ...base, partner_id: newId('p'), secret_key: 'nope' })).status).toBe(400);
    const max = `${newId('p')}`.padEnd(64, 'x');
    expect((await post({ ...base, partner_id: max })).status).toBe(201);
    const dup = await post({ ...base, partner_id: max });
    expect([dup.status, dup.body.error]).toEqual([409, 'conflict']);
    expect((await admin(t, 'GET', '/admin/v1/partners/nobody')).status).toBe(404);
    expect((await fetch(`${t.url}/admin/v1/partners`)).status).toBe(401);
  });

  it('patches name, enabled, games and rate limit (audited); unknown game 400', async () => {
    const [g1, g2] = [await createGame(t), await createGame(t)];
    const p = await createPartner(t, [g1.gameId]);
    const r = await admin(t, 'PATCH', `/admin/v1/partners/${p.partnerId}`, { name: 'Renamed', enabled: false, games: [g2.gameId, g1.gameId], rate_limit_per_second: 7 });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'Renamed', enabled: false, games: [g1.gameId, g2.gameId].sort(), rate_limit_per_second: 7 });
    const bad = await admin(t, 'PATCH', `/admin/v1/partners/${p.partnerId}`, { games: ['missing-game'] });
    expect(bad.status).toBe(400);
    expect((await admin(t, 'GET', `/admin/v1/partners/${p.partnerId}`)).body.games).toEqual([g1.gameId, g2.gameId].sort());
    expect((await admin(t, 'PATCH', `/admin/v1/partners/${p.partnerId}`, { games: [] })).body.games).toEqual([]);
    expect((await admin(t, 'PATCH', '/admin/v1/partners/nobody', { enabled: true })).status).toBe(404);
    const audit = await t.service.database.db.selectFrom('audit_log').select('action').where('target', '=', p.partnerId).orderBy('audit_id').execute();
    expect(audit.map((a) => a.action)).toEqual(['partner.create', 'partner.update', 'partner.update']);
  });

  it('lists partners in id order with cursor paging', async () => {
    const mine = new Set<string>();
    for (let i = 0; i < 5; i++) mine.add((await createPartner(t, [])).partnerId);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r = await admin(t, 'GET', `/admin/v1/partners?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(r.status).toBe(200);
      expect(r.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.data.map((p: { partner_id: string }) => p.partner_id));
      cursor = r.body.next_cursor;
    } while (cursor);
    expect([...seen].sort()).toEqual(seen);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of mine) expect(seen).toContain(id);
    expect((await admin(t, 'GET', '/admin/v1/partners?limit=201')).status).toBe(400);
    expect((await admin(t, 'GET', '/admin/v1/partners?cursor=%%%')).status).toBe(400);
  });
});

describe('partner keys', () => {
  async function setup(): Promise<{ game: TestGame; partner: TestPartner; uri: string }> {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    return { game, partner, uri: queryUri(game.gameId, 'nobody') };
  }

  it('rotates: both keys work, at most two, the last cannot be deleted, a deleted key is refused', async () => {
    const { partner, uri } = await setup();
    // A new key takes no body: a field (a secret meant to be set) is 400, not ignored.
    const withField = await admin(t, 'POST', `/admin/v1/partners/${partner.partnerId}/keys`, { secret_key: 'sk_mychosenkey0123456789abcdef' });
    expect([withField.status, withField.body.error]).toEqual([400, 'invalid_request']);
    expect(withField.body.message).toContain('secret_key');
    // 404 binding_not_found proves the signature was accepted.
    expect((await partnerGet(t, partner, uri)).status).toBe(404);
    const k = await admin(t, 'POST', `/admin/v1/partners/${partner.partnerId}/keys`, {});
    expect(k.status).toBe(201);
    expect(k.body).toEqual({ key_id: expect.stringMatching(/^key_/), secret_key: expect.stringMatching(/^sk_[0-9A-Za-z]{43}$/) });
    expect((await partnerGet(t, partner, uri)).status).toBe(404);
    expect((await partnerGet(t, partner, uri, { secret: k.body.secret_key })).status).toBe(404);
    const third = await admin(t, 'POST', `/admin/v1/partners/${partner.partnerId}/keys`, {});
    expect(third.status).toBe(409);
    expect((await admin(t, 'GET', `/admin/v1/partners/${partner.partnerId}`)).body.key_ids).toEqual([k.body.key_id, partner.keyId]);
    const del = await admin(t, 'DELETE', `/admin/v1/partners/${partner.partnerId}/keys/${partner.keyId}`);
    expect([del.status, del.body]).toEqual([200, {}]);
    const old = await partnerGet(t, partner, uri);
    expect([old.status, old.body.error]).toEqual([401, 'invalid_signature']);
    expect((await partnerGet(t, partner, uri, { secret: k.body.secret_key })).status).toBe(404);
    const last = await admin(t, 'DELETE', `/admin/v1/partners/${partner.partnerId}/keys/${k.body.key_id}`);
    expect(last.status).toBe(409);
    expect((await admin(t, 'DELETE', `/admin/v1/partners/${partner.partnerId}/keys/key_nope`)).status).toBe(404);
    expect((await admin(t, 'POST', '/admin/v1/partners/nobody/keys', {})).status).toBe(404);
  });

  it('disabling answers 403 partner_disabled; enabling again restores access', async () => {
    const { partner, uri } = await setup();
    await admin(t, 'PATCH', `/admin/v1/partners/${partner.partnerId}`, { enabled: false });
    const r = await partnerGet(t, partner, uri);
    expect([r.status, r.body.error]).toEqual([403, 'partner_disabled']);
    await admin(t, 'PATCH', `/admin/v1/partners/${partner.partnerId}`, { enabled: true });
    expect((await partnerGet(t, partner, uri)).status).toBe(404);
  });

  it('revoking a game grant answers 400 for that game', async () => {
    const { partner, uri } = await setup();
    await admin(t, 'PATCH', `/admin/v1/partners/${partner.partnerId}`, { games: [] });
    const r = await partnerGet(t, partner, uri);
    expect([r.status, r.body.error]).toEqual([400, 'invalid_request']);
  });
});

describe('security: the partner endpoint refuses every bad signature with 401 invalid_signature', () => {
  it.each([
    ['missing Authorization', (p: TestPartner, uri: string) => ({ authorization: null as string | null, uri })],
    ['another scheme', (p: TestPartner, uri: string) => ({ authorization: `Bearer ${p.secret}`, uri })],
    ['malformed parameters', (p: TestPartner, uri: string) => ({ authorization: `SEAYOO-HMAC-SHA256 Partner=${p.partnerId}`, uri })],
    ['a non-hex signature', (p: TestPartner, uri: string) => ({
      authorization: `SEAYOO-HMAC-SHA256 Partner=${p.partnerId},Timestamp=${formatTimestamp(Date.now())},Signature=${'z'.repeat(64)}`,
      uri,
    })],
    ['a timestamp 301 s old', (p: TestPartner, uri: string) => ({
      authorization: authorizationHeader({ kind: 'partner', id: p.partnerId }, p.secret, 'GET', uri, '', Date.now() - 301_000),
      uri,
    })],
    ['a timestamp 301 s ahead', (p: TestPartner, uri: string) => ({
      authorization: authorizationHeader({ kind: 'partner', id: p.partnerId }, p.secret, 'GET', uri, '', Date.now() + 301_000),
      uri,
    })],
    ['a wrong key', (p: TestPartner, uri: string) => ({
      authorization: authorizationHeader({ kind: 'partner', id: p.partnerId }, 'sk_not_the_partner_key_000', 'GET', uri, '', Date.now()),
      uri,
    })],
    ['a signature over another query string', (p: TestPartner, uri: string) => ({
      authorization: authorizationHeader({ kind: 'partner', id: p.partnerId }, p.secret, 'GET', uri, '', Date.now()),
      uri: uri.replace('partner_user_id=nobody', 'partner_user_id=somebody'),
    })],
    ['a Partner= of an unknown partner', (p: TestPartner, uri: string) => ({
      authorization: authorizationHeader({ kind: 'partner', id: 'no-such-partner' }, p.secret, 'GET', uri, '', Date.now()),
      uri,
    })],
  ])('%s', async (_name, make) => {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    const { authorization, uri } = make(partner, queryUri(game.gameId, 'nobody'));
    const r = await partnerGet(t, partner, uri, { authorization });
    expect([r.status, r.body.error]).toEqual([401, 'invalid_signature']);
    expect(r.headers.get('www-authenticate')).toBe('SEAYOO-HMAC-SHA256');
  });

  it('a Game= header, even validly signed by a game, is refused on the partner endpoint', async () => {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    const uri = queryUri(game.gameId, 'nobody');
    const authorization = authorizationHeader({ kind: 'game', id: game.gameId }, game.secret, 'GET', uri, '', Date.now());
    const r = await partnerGet(t, partner, uri, { authorization });
    expect([r.status, r.body.error]).toEqual([401, 'invalid_signature']);
  });

  it('a Partner= header is refused on the game endpoints', async () => {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    const body = JSON.stringify({ partner_id: partner.partnerId, partner_user_id: 'u', combo_id: 'c', role_id: 'r' });
    const uri = '/v1/server/bind-partner-user';
    const res = await fetch(t.url + uri, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: authorizationHeader({ kind: 'partner', id: partner.partnerId }, partner.secret, 'POST', uri, body, Date.now()),
      },
      body,
    });
    expect(res.status).toBe(401);
  });

  it('signs the raw query string exactly as sent (percent-encoding kept)', async () => {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    const uri = `/v1/query-binding?game_id=${game.gameId}&partner_user_id=%E9%BE%8D%20a%2Bb`;
    expect((await partnerGet(t, partner, uri)).status).toBe(404);
  });
});

describe('concurrent grant changes', () => {
  it('serialises concurrent PATCHes of games (no 500, the grants are one of the sets)', async () => {
    const games = [await createGame(t), await createGame(t), await createGame(t)].map((g) => g.gameId);
    const p = await createPartner(t, []);
    const sets = [[games[0]!], [games[1]!, games[2]!], games, [games[2]!]];
    const answers = await Promise.all(sets.flatMap((g) => [g, g]).map((g) => admin(t, 'PATCH', `/admin/v1/partners/${p.partnerId}`, { games: g })));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    const final = (await admin(t, 'GET', `/admin/v1/partners/${p.partnerId}`)).body.games;
    expect(sets.map((s) => [...s].sort().join())).toContain(final.join());
  });
});

describe('concurrent key changes', () => {
  it('never leaves more than two keys, nor none', async () => {
    const p = await createPartner(t, []);
    const adds = await Promise.all(Array.from({ length: 6 }, () => admin(t, 'POST', `/admin/v1/partners/${p.partnerId}/keys`, {})));
    expect(adds.filter((a) => a.status === 201)).toHaveLength(1);
    expect(adds.filter((a) => a.status === 409)).toHaveLength(5);
    const keyIds: string[] = (await admin(t, 'GET', `/admin/v1/partners/${p.partnerId}`)).body.key_ids;
    expect(keyIds).toHaveLength(2);
    const dels = await Promise.all(keyIds.map((k) => admin(t, 'DELETE', `/admin/v1/partners/${p.partnerId}/keys/${k}`)));
    expect(dels.map((d) => d.status).sort()).toEqual([200, 409]);
    expect((await admin(t, 'GET', `/admin/v1/partners/${p.partnerId}`)).body.key_ids).toHaveLength(1);
  });
});

// rest-interface 4.4: query-binding has no request body. A body sent anyway is held to PROTOCOL
// 2 like any other: media type (415), size (413), signature over its bytes (401), then refused
// as a parameter error (400). 404 binding_not_found shows a request got through every check.
describe('a GET that carries a body', () => {
  async function setup(): Promise<{ partner: TestPartner; uri: string }> {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    return { partner, uri: queryUri(game.gameId, 'nobody') };
  }
  const sign = (p: TestPartner, uri: string, body: string) => authorizationHeader({ kind: 'partner', id: p.partnerId }, p.secret, 'GET', uri, body, Date.now());

  it('with another Content-Type, or none -> 415', async () => {
    const { partner, uri } = await setup();
    for (const type of ['Content-Type: text/plain', null]) {
      const r = await rawRequest(t, head('GET', uri, [...(type ? [type] : []), `Authorization: ${sign(partner, uri, 'abc')}`], 3), 'abc');
      expect([type, r.status, JSON.parse(r.body).error]).toEqual([type, 415, 'unsupported_media_type']);
    }
  });

  it('JSON, signed over its bytes -> 400 naming the route', async () => {
    const { partner, uri } = await setup();
    const body = '{"a":1}';
    const r = await rawRequest(t, head('GET', uri, ['Content-Type: application/json', `Authorization: ${sign(partner, uri, body)}`], body.length), body);
    expect([r.status, JSON.parse(r.body)]).toEqual([400, { error: 'invalid_request', message: 'GET /v1/query-binding takes no request body' }]);
  });

  it('JSON, signed as if it had no body -> 401: the signature covers the bytes received', async () => {
    const { partner, uri } = await setup();
    const body = '{"a":1}';
    const r = await rawRequest(t, head('GET', uri, ['Content-Type: application/json', `Authorization: ${sign(partner, uri, '')}`], body.length), body);
    expect([r.status, JSON.parse(r.body).error]).toEqual([401, 'invalid_signature']);
  });

  it('over 64 KiB -> 413, by Content-Length and chunked', async () => {
    const { partner, uri } = await setup();
    const body = JSON.stringify({ a: 'x'.repeat(64 * 1024) });
    const auth = `Authorization: ${sign(partner, uri, body)}`;
    const byLength = await rawRequest(t, head('GET', uri, ['Content-Type: application/json', auth], body.length), body);
    expect([byLength.status, JSON.parse(byLength.body).error]).toEqual([413, 'invalid_request']);
    const chunkedHead = [`GET ${uri} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', 'Transfer-Encoding: chunked', 'Content-Type: application/json', auth, ''].join('\r\n');
    const chunked = await rawRequest(t, chunkedHead, `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`);
    expect([chunked.status, JSON.parse(chunked.body).error]).toEqual([413, 'invalid_request']);
  });

  it('no body: any Content-Type or none is fine (Content-Length: 0 too)', async () => {
    const { partner, uri } = await setup();
    for (const type of ['Content-Type: text/plain', 'Content-Type: application/json', null]) {
      const r = await rawRequest(t, head('GET', uri, [...(type ? [type] : []), `Authorization: ${sign(partner, uri, '')}`], 0));
      expect([type, r.status, JSON.parse(r.body).error]).toEqual([type, 404, 'binding_not_found']);
    }
  });

  it('an operator DELETE with a body -> 400, and nothing is deleted', async () => {
    const { partner } = await setup();
    const k = await admin(t, 'POST', `/admin/v1/partners/${partner.partnerId}/keys`, {});
    const path = `/admin/v1/partners/${partner.partnerId}/keys/${k.body.key_id}`;
    const r = await rawRequest(t, head('DELETE', path, ['Content-Type: application/json', `Authorization: Bearer ${ADMIN_TOKEN}`], 2), '{}');
    expect([r.status, JSON.parse(r.body).message]).toEqual([400, 'DELETE /admin/v1/partners/:partner_id/keys/:key_id takes no request body']);
    expect((await admin(t, 'GET', `/admin/v1/partners/${partner.partnerId}`)).body.key_ids).toHaveLength(2);
  });
});

describe('a GET that carries a body over HTTP/2 (no Content-Length needed there)', () => {
  function h2get(uri: string, headers: Record<string, string>, body: string | null): Promise<{ status: number; body: { error: string; message: string } }> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(t.url);
      session.on('error', reject);
      const req = session.request({ ':method': 'GET', ':path': uri, ...headers }, { endStream: body === null });
      const chunks: Buffer[] = [];
      let status = 0;
      req.on('response', (h) => (status = Number(h[':status'])));
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('error', reject);
      req.on('end', () => {
        session.close();
        resolve({ status, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      });
      if (body !== null) req.end(body);
    });
  }

  it('is held to the same checks: 415, 401 over its bytes, then 400; without one, 404 binding_not_found', async () => {
    const game = await createGame(t);
    const partner = await createPartner(t, [game.gameId]);
    const uri = queryUri(game.gameId, 'nobody');
    const sign = (body: string) => authorizationHeader({ kind: 'partner', id: partner.partnerId }, partner.secret, 'GET', uri, body, Date.now());
    const body = '{"a":1}';
    const plain = await h2get(uri, { 'content-type': 'text/plain', authorization: sign(body) }, body);
    expect([plain.status, plain.body.error]).toEqual([415, 'unsupported_media_type']);
    const unsigned = await h2get(uri, { 'content-type': 'application/json', authorization: sign('') }, body);
    expect([unsigned.status, unsigned.body.error]).toEqual([401, 'invalid_signature']);
    const json = await h2get(uri, { 'content-type': 'application/json', authorization: sign(body) }, body);
    expect([json.status, json.body.message]).toEqual([400, 'GET /v1/query-binding takes no request body']);
    const none = await h2get(uri, { 'content-type': 'text/plain', authorization: sign('') }, null);
    expect([none.status, none.body.error]).toEqual([404, 'binding_not_found']);
    // The stream ended by an empty DATA frame instead of by its HEADERS: still no body.
    const emptyData = await h2get(uri, { 'content-type': 'text/plain', authorization: sign('') }, '');
    expect([emptyData.status, emptyData.body.error]).toEqual([404, 'binding_not_found']);
  });
});
