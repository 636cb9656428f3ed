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
import { createGame, signed, startService, type TestService } from './helpers/service.js';

// A client may half-close its connection after its request (RFC 9112 9.6: a half-closed
// connection does not delimit a request, nor say the answer is no longer wanted; `printf ... |
// nc -N` does it, as do some health checkers). Node's HTTP/1.1 server aborted the request in
// progress at the FIN and dropped its answer, though the write it made may have committed
// (src/http/dual-server.ts).

const ENTER = '/v1/server/enter-game';

/**
 * Writes `bytes`, half-closes (at once, or when `halfClose` resolves), and resolves with all
 * the server sent once it closed too.
 */
function sendThenHalfClose(t: TestService, bytes: Buffer | string, halfClose: Promise<void> = Promise.resolve()): Promise<string> {
  const { hostname, port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port), allowHalfOpen: true }, () => {
      socket.write(bytes);
      void halfClose.then(() => socket.end());
    });
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    // Resolves only when the server ends the connection: a server that kept it open would fail
    // the test by its time-out, long before the 20 s header time-out would close it.
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
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
    const game = await createGame(t, { gm_url: gm.url });
    gmKeys.set(game.gameId, [game.secret]);
    const partner = await createPartner(t, [game.gameId]);
    gm.roles.set('hc-player', [role('r1')]);
    expect((await signed(t, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'hc-u', combo_id: 'hc-player', role_id: 'r1' })).status).toBe(200);
    gm.mode = { kind: 'hold' };
    const uri = queryUri(game.gameId, 'hc-u');
    const auth = authorizationHeader({ kind: 'partner', id: partner.partnerId }, partner.secret, 'GET', uri, '');
    // The FIN goes once the service is waiting for the GM; another request on another
    // connection, answered, means the service has read it. Only then does the GM answer.
    const halfClosed = until(() => gm.callsFor(game.gameId) === 1, 'the GM call').then(() => undefined);
    const answer = sendThenHalfClose(t, `GET ${uri} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n\r\n`, halfClosed);
    await halfClosed;
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
    // An incomplete head or body is a malformed request: 400, then closed.
    for (const partial of ['GET /healthz HTTP/1.1\r\nHo', `POST ${ENTER} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"combo_id"`]) {
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
    const game = await createGame(plain, { gm_url: gm.url });
    gmKeys.set(game.gameId, [game.secret]);
    const partner = await createPartner(plain, [game.gameId]);
    gm.roles.set('tls-player', [role('r1')]);
    expect((await signed(plain, game, 'POST', '/v1/server/bind-partner-user', { partner_id: partner.partnerId, partner_user_id: 'tls-u', combo_id: 'tls-player', role_id: 'r1' })).status).toBe(200);
    gm.mode = { kind: 'hold' };
    const uri = queryUri(game.gameId, 'tls-u');
    const auth = authorizationHeader({ kind: 'partner', id: partner.partnerId }, partner.secret, 'GET', uri, '');
    const halfClosed = until(() => gm.callsFor(game.gameId) === 1, 'the GM call').then(() => undefined);
    const { hostname, port } = new URL(t.url);
    const answer = new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ host: hostname, port: Number(port), ALPNProtocols: ['http/1.1'], rejectUnauthorized: false, servername: 'localhost' }, () => {
        socket.write(`GET ${uri} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\n\r\n`);
        void halfClosed.then(() => socket.end());
      });
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    await halfClosed;
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
