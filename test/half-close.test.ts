import { mkdtempSync, rmSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { authorizationHeader } from '../src/signing/signer.js';
import { selfSignedCertificate } from './helpers/certificates.js';
import { createPartner, FakeGm, queryUri, role, until } from './helpers/partners.js';
import { statusesOf, storedRows } from './helpers/raw.js';
import { createGame, signed, startService, wrongSignature, type TestService } from './helpers/service.js';

// A client may half-close its connection after its request (RFC 9112 9.6: a half-closed
// connection does not delimit a request, nor say the answer is no longer wanted; `printf ... |
// nc -N` does it, as do some health checkers). Node's HTTP/1.1 server aborted the request in
// progress at the FIN and dropped its answer, though the write it made may have committed
// (src/http/dual-server.ts).

const ENTER = '/v1/server/enter-game';

/**
 * Writes `bytes` on a socket from `connect`, half-closes (at once, or when `halfClose`
 * resolves), and resolves with all the server sent once it closed too. It resolves only when the
 * server ends the connection: a server that kept it open fails the test by its time-out, long
 * before the 20 s header time-out would close it.
 */
function exchangeThenHalfClose(connect: (onConnect: () => void) => net.Socket, bytes: Buffer | string, halfClose: Promise<void> = Promise.resolve()): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(() => {
      socket.write(bytes);
      void halfClose.then(() => socket.end());
    });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
}

/** The same over cleartext TCP to `t`. */
function sendThenHalfClose(t: TestService, bytes: Buffer | string, halfClose?: Promise<void>): Promise<string> {
  const { hostname, port } = new URL(t.url);
  return exchangeThenHalfClose((onConnect) => net.connect({ host: hostname, port: Number(port), allowHalfOpen: true }, onConnect), bytes, halfClose);
}

/**
 * A game whose GM holds its answers (until gm.release()), a partner and a bound user, set up
 * through `setup`; the partner's signed query-binding request, and a promise that the service
 * has called the GM with it (the answer is then being made).
 */
async function heldRoleQuery(setup: TestService, gm: FakeGm, gmKeys: Map<string, string[]>, player: string): Promise<{ request: string; gmCalled: Promise<void> }> {
  const game = await createGame(setup, { gm_url: gm.url });
  gmKeys.set(game.gameId, [game.secret]);
  const partner = await createPartner(setup, [game.gameId]);
  gm.roles.set(player, [role('r1')]);
  const bound = await signed(setup, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: `${player}-u`, combo_id: player, role_id: 'r1' });
  expect(bound.status).toBe(200);
  gm.mode = { kind: 'hold' };
  const uri = queryUri(game.gameId, `${player}-u`);
  const auth = authorizationHeader({ kind: 'partner', id: partner.partnerId }, partner.secret, 'GET', uri, '');
  return {
    request: `GET ${uri} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n\r\n`,
    gmCalled: until(() => gm.callsFor(game.gameId) === 1, 'the GM call').then(() => undefined),
  };
}

describe('HTTP/1.1 clients that half-close after their request', () => {
  let t: TestService;
  let gm: FakeGm;
  const gmKeys = new Map<string, string[]>();
  beforeAll(async () => {
    t = await startService();
    gm = await new FakeGm(() => gmKeys, () => Date.now()).start();
  });
  afterAll(async () => {
    await t?.stop();
    await gm?.stop();
  });

  it('get an answer that is still being made at the FIN (the game\'s GM answers after it)', async () => {
    const { request, gmCalled } = await heldRoleQuery(t, gm, gmKeys, 'hc-player');
    // The FIN goes once the service is waiting for the GM; another request on another
    // connection, answered, means the service has read it. Only then does the GM answer.
    const answer = sendThenHalfClose(t, request, gmCalled);
    await gmCalled;
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    gm.release();
    const text = await answer;
    expect(statusesOf(text)).toEqual([200]);
    expect(text).toContain('"role_id":"r1"');
  });

  it('get the answer of a signed write, which is stored; then the server closes the connection', async () => {
    const game = await createGame(t);
    const body = JSON.stringify({ combo_id: 'half-closer', session_id: 'hc-1' });
    const auth = authorizationHeader({ kind: 'game', id: game.gameId }, game.secret, 'POST', ENTER, body);
    const request = [`POST ${ENTER} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Type: application/json', `Content-Length: ${Buffer.byteLength(body)}`, `Authorization: ${auth}`, '', body].join('\r\n');
    const answer = await sendThenHalfClose(t, request);
    expect(statusesOf(answer)).toEqual([200]);
    expect(answer).toMatch(/\r\n\r\n\{\}$/);
    expect((await storedRows(t, game.gameId)).sessions).toBe(1);
  });

  it('get every answer of requests pipelined before the FIN, in order', async () => {
    const one = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
    const answer = await sendThenHalfClose(t, one + 'GET /no/such/path HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n' + one);
    expect(statusesOf(answer)).toEqual([200, 404, 200]);
  });

  it('a FIN with no request, or in the middle of one, closes the connection at once', async () => {
    expect(await sendThenHalfClose(t, '')).toBe('');
    // An incomplete head or body is a malformed request: 400, then closed. (The body's request
    // carries a real game's Authorization, which only its body can prove wrong: without one it
    // is answered 401 before its body is read.)
    const auth = wrongSignature(await createGame(t), 'POST', ENTER);
    for (const partial of ['GET /healthz HTTP/1.1\r\nHo', `POST ${ENTER} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"combo_id"`]) {
      const answer = await sendThenHalfClose(t, partial);
      expect(statusesOf(answer), JSON.stringify(partial)).toEqual([400]);
      expect(answer).toContain('"message":"malformed HTTP request (HPE_INVALID_EOF_STATE)"');
    }
  });

  it('an HTTP/2 client\'s FIN ends its session (prior knowledge, after the preface and SETTINGS)', async () => {
    const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    const emptySettings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    const answer = await sendThenHalfClose(t, Buffer.concat([preface, emptySettings]));
    // The server's SETTINGS frame (type 4) came first; then it closed.
    expect(answer.charCodeAt(3)).toBe(4);
  });
});

describe('over TLS, HTTP/1.1 clients that half-close after their request', () => {
  // The set-up goes through a cleartext instance on the same database (fetch refuses the
  // self-signed certificate); the request under test through the TLS one.
  let plain: TestService;
  let t: TestService;
  let dir: string;
  let gm: FakeGm;
  const gmKeys = new Map<string, string[]>();
  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'combo-half-close-'));
    const { cert, key } = selfSignedCertificate(dir);
    plain = await startService();
    t = await startService({ db: plain.db, env: { TLS_CERT: cert, TLS_KEY: key } });
    gm = await new FakeGm(() => gmKeys, () => Date.now()).start();
  });
  afterAll(async () => {
    await t?.stop();
    await plain?.stop();
    await gm?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('get an answer still being made at the FIN', async () => {
    const { request, gmCalled } = await heldRoleQuery(plain, gm, gmKeys, 'tls-player');
    const { hostname, port } = new URL(t.url);
    const connect = (onConnect: () => void) => tls.connect({ host: hostname, port: Number(port), ALPNProtocols: ['http/1.1'], rejectUnauthorized: false, servername: 'localhost' }, onConnect);
    const answer = exchangeThenHalfClose(connect, request, gmCalled);
    await gmCalled;
    const healthz = await new Promise<number>((resolve, reject) =>
      https.get(`${t.url}/healthz`, { rejectUnauthorized: false }, (r) => resolve(r.resume().statusCode ?? 0)).on('error', reject),
    );
    expect(healthz).toBe(200);
    gm.release();
    const text = await answer;
    expect(statusesOf(text)).toEqual([200]);
    expect(text).toContain('"role_id":"r1"');
  });
});
