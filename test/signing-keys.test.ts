import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Receiver, until } from './helpers/receiver.js';
import { notificationRow, paidOrder } from './helpers/paid-orders.js';
import { createPartner, FakeGm, partnerGet, queryUri, role, type TestPartner } from './helpers/partners.js';
import { admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

/**
 * operators.md 2: notifications and GM calls are signed with the key the game last signed a
 * server API request with; a game that never called is signed for with its oldest active key.
 * The receiver and the GM stand-in verify with only the keys the test says the game holds.
 */
const receiverKeys = new Map<string, string[]>();
const gmKeys = new Map<string, string[]>();
let receiver: Receiver;
let gm: FakeGm;
let t: TestService;

beforeAll(async () => {
  receiver = await new Receiver({ keys: receiverKeys, now: () => Date.now() }).start();
  gm = await new FakeGm(() => gmKeys, () => Date.now()).start();
  t = await startService({ env: { NOTIFY_POLL_INTERVAL_MS: '50', NOTIFY_RETRY_BASE_MS: '40', ROLE_CACHE_TTL_SECONDS: '0' } });
});
afterAll(async () => {
  await t?.stop();
  await gm?.stop();
  await receiver?.close();
});

const CREATE = '/v1/server/create-order';
let paths = 0;

/** Delivers one ship_order and answers the receiver's verdict on its signature (null: valid). */
async function deliver(game: TestGame): Promise<string | null> {
  const path = `/notify/keys-${++paths}`;
  const { notificationId } = await paidOrder(t, game, `${receiver.url}${path}`);
  await until(`a delivery on ${path}`, () => receiver.on(path)[0]);
  // A refused delivery stays pending (retried); a valid one succeeds.
  const first = receiver.on(path)[0]!;
  if (first.signatureProblem === null) await until(`notification ${notificationId} delivered`, async () => (await notificationRow(t, notificationId)).status === 'succeeded' || null);
  return first.signatureProblem;
}

/** A GM call made for a partner's query-binding: the GM stand-in's verdict (null: valid). */
async function gmCall(game: TestGame, partner: TestPartner): Promise<string | null> {
  const failuresBefore = gm.failures.length;
  const callsBefore = gm.callsFor(game.gameId);
  const r = await partnerGet(t, partner, queryUri(game.gameId, 'pu-1'));
  if (gm.callsFor(game.gameId) > callsBefore) {
    expect(r.status, r.text).toBe(200);
    return null;
  }
  return gm.failures.slice(failuresBefore).join('; ') || `no GM call (answer ${r.status})`;
}

async function signingKeyOf(game: TestGame): Promise<string> {
  const g = await admin(t, 'GET', `/admin/v1/games/${game.gameId}`);
  expect(g.status).toBe(200);
  const listed = await admin(t, 'GET', `/admin/v1/games?limit=200`);
  const inList = (listed.body.data as { game_id: string; signing_key_id: string }[]).find((x) => x.game_id === game.gameId);
  expect(inList?.signing_key_id).toBe(g.body.signing_key_id);
  return g.body.signing_key_id;
}

describe('the key that signs outgoing requests', () => {
  it('stays the old key after a rotation until the game signs a request with the new one; deleting the old key then breaks nothing', async () => {
    const old = await createGame(t, { gm_url: gm.url });
    receiverKeys.set(old.gameId, [old.secret]);
    gmKeys.set(old.gameId, [old.secret]);
    const partner = await createPartner(t, [old.gameId]);
    gm.roles.set('combo-rot', [role('r1')]);
    const bound = await signed(t, old, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'pu-1', combo_id: 'combo-rot', role_id: 'r1' });
    expect(bound.status, bound.text).toBe(200);
    expect(await deliver(old)).toBeNull();
    expect(await gmCall(old, partner)).toBeNull();

    const created = await admin(t, 'POST', `/admin/v1/games/${old.gameId}/keys`);
    expect(created.status).toBe(201);
    const fresh: TestGame = { gameId: old.gameId, secret: created.body.secret_key, keyId: created.body.key_id };
    expect(await signingKeyOf(old)).toBe(old.keyId);
    // The receiver and the GM hold only the old key: every delivery and GM call stays valid.
    expect(await deliver(old)).toBeNull();
    expect(await gmCall(old, partner)).toBeNull();
    // The game's own requests with the old key change nothing.
    expect((await signed(t, old, 'POST', CREATE, orderBody())).status).toBe(200);
    expect(await deliver(old)).toBeNull();
    expect(await signingKeyOf(old)).toBe(old.keyId);

    // The game signs one request with the new key: from then on the new key signs.
    expect((await signed(t, fresh, 'POST', CREATE, orderBody())).status).toBe(200);
    expect(await signingKeyOf(old)).toBe(fresh.keyId);
    const stored = await t.service.database.db.selectFrom('games').select('last_used_key_id').where('game_id', '=', old.gameId).executeTakeFirstOrThrow();
    expect(stored.last_used_key_id).toBe(fresh.keyId);
    receiverKeys.set(old.gameId, [fresh.secret]);
    gmKeys.set(old.gameId, [fresh.secret]);
    expect(await deliver(old)).toBeNull();
    expect(await gmCall(old, partner)).toBeNull();

    const del = await admin(t, 'DELETE', `/admin/v1/games/${old.gameId}/keys/${old.keyId}`);
    expect(del.status).toBe(200);
    expect(await signingKeyOf(old)).toBe(fresh.keyId);
    expect(await deliver(old)).toBeNull();
    expect(await gmCall(old, partner)).toBeNull();
    expect((await signed(t, fresh, 'POST', CREATE, orderBody())).status).toBe(200);
  });

  it('a game that never called is signed for with its oldest active key', async () => {
    const g = await createGame(t);
    const created = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`);
    expect(created.status).toBe(201);
    expect(await signingKeyOf(g)).toBe(g.keyId);
    receiverKeys.set(g.gameId, [created.body.secret_key]);
    // Signed with the oldest key, which this receiver does not hold.
    expect(await deliver(g)).toBe('signature mismatch');
    receiverKeys.set(g.gameId, [g.secret]);
    expect(await deliver(g)).toBeNull();
  });

  it('a GM call of a game that never signed with its new key uses the oldest key', async () => {
    const g = await createGame(t, { gm_url: gm.url });
    gmKeys.set(g.gameId, [g.secret]);
    const partner = await createPartner(t, [g.gameId]);
    gm.roles.set('combo-never', [role('r1')]);
    // The binding is written directly: the game makes no signed request at all.
    await t.service.database.db
      .insertInto('bindings')
      .values({ game_id: g.gameId, partner_id: partner.partnerId, partner_user_id: 'pu-1', combo_id: 'combo-never', role_id: 'r1', bound_at: Date.now() })
      .execute();
    const created = await admin(t, 'POST', `/admin/v1/games/${g.gameId}/keys`);
    expect(created.status).toBe(201);
    expect(await gmCall(g, partner)).toBeNull();
    gmKeys.set(g.gameId, [created.body.secret_key]);
    expect(await gmCall(g, partner)).not.toBeNull();
  });

  it('switching back and forth between two keys follows the last one used', async () => {
    const a = await createGame(t);
    const created = await admin(t, 'POST', `/admin/v1/games/${a.gameId}/keys`);
    const b: TestGame = { gameId: a.gameId, secret: created.body.secret_key, keyId: created.body.key_id };
    for (const k of [b, a, b]) {
      expect((await signed(t, k, 'POST', CREATE, orderBody())).status).toBe(200);
      expect(await signingKeyOf(a)).toBe(k.keyId);
      receiverKeys.set(a.gameId, [k.secret]);
      expect(await deliver(a)).toBeNull();
    }
  });

  it('another instance on the same database signs with the new key from its next snapshot load', async () => {
    const b = await startService({ db: t.db, env: { NOTIFY_POLL_INTERVAL_MS: '50', NOTIFY_RETRY_BASE_MS: '40' } });
    try {
      const old = await createGame(t);
      const created = await admin(t, 'POST', `/admin/v1/games/${old.gameId}/keys`);
      const fresh: TestGame = { gameId: old.gameId, secret: created.body.secret_key, keyId: created.body.key_id };
      // B has the game's snapshot in memory, from a request signed with the old key.
      expect((await signed(b, old, 'POST', CREATE, orderBody())).status).toBe(200);
      // The game switches to the new key on A: stored once, for B to read.
      expect((await signed(t, fresh, 'POST', CREATE, orderBody())).status).toBe(200);
      expect((await admin(b, 'GET', `/admin/v1/games/${old.gameId}`)).body.signing_key_id).toBe(fresh.keyId);
      // A delivery by either instance ends signed with the new key (B's once its snapshot is
      // loaded again, within the snapshot cache's 5 s; refused attempts before are retried).
      receiverKeys.set(old.gameId, [fresh.secret]);
      const path = `/notify/keys-${++paths}`;
      const { notificationId } = await paidOrder(b, old, `${receiver.url}${path}`);
      await until(`notification ${notificationId} delivered`, async () => (await notificationRow(b, notificationId)).status === 'succeeded' || null, 20_000);
      expect(receiver.on(path).at(-1)!.signatureProblem).toBeNull();
      // B's own snapshot, loaded again, puts the new key first.
      expect((await b.service.games.stored(old.gameId))?.keyIds[0]).toBe(fresh.keyId);
    } finally {
      await b.stop();
    }
  });
});
