import { spawn } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/db/index.js';
import { keyId, SecretBox } from '../src/lib/secret-box.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { createPartner, partnerGet, queryUri, type TestPartner } from './helpers/partners.js';
import { admin, createGame, orderBody, signed, startService, type TestGame, type TestService } from './helpers/service.js';

const NPPA_SECRET = '0123456789abcdef0123456789abcdef';
const nppa = { app_id: 'c'.repeat(32), biz_id: '1101999999', secret_key: NPPA_SECRET };

/** Every row of every table, as text: a plaintext secret must appear nowhere. */
async function dumpDatabase(t: TestService): Promise<string> {
  const db = t.service.database.db;
  const tables = ['games', 'game_keys', 'products', 'orders', 'order_events', 'notifications', 'sessions', 'nppa_events', 'partners', 'partner_keys', 'partner_games', 'bindings', 'audit_log', 'service_state'] as const;
  const out: string[] = [];
  for (const table of tables) out.push(JSON.stringify(await db.selectFrom(table).selectAll().execute()));
  return out.join('\n');
}

/** `npm run cli -- rotate-secrets` as an operator runs it: a separate process, configured by env. */
function runCli(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(path.resolve('node_modules/.bin/tsx'), ['src/cli.ts', ...args], {
      env: { PATH: process.env.PATH ?? '', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'combo-cli-')), ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

function sealV1(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return `v1:${Buffer.concat([iv, ct, c.getAuthTag()]).toString('base64url')}`;
}

describe('secrets at rest', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startService();
  });
  afterAll(async () => t?.stop());

  it('stores no plaintext game, partner or national-system secret in any table', async () => {
    const given = `sk_${randomBytes(24).toString('hex')}`;
    const gameId = `sealed_${randomBytes(4).toString('hex')}`;
    const created = await admin(t, 'POST', '/admin/v1/games', { game_id: gameId, name: 'Sealed', secret_key: given });
    expect(created.status).toBe(201);
    const extra = await admin(t, 'POST', `/admin/v1/games/${gameId}/keys`, {});
    expect((await admin(t, 'PATCH', `/admin/v1/games/${gameId}`, { nppa })).status).toBe(200);
    const partnerSecret = `sk_${randomBytes(24).toString('hex')}`;
    const partner = await createPartner(t, [gameId], { secret_key: partnerSecret });
    const partnerKey2 = await admin(t, 'POST', `/admin/v1/partners/${partner.partnerId}/keys`, {});
    expect(partnerKey2.status).toBe(201);

    const keys = await t.service.database.db.selectFrom('game_keys').select(['key_id', 'secret_enc']).where('game_id', '=', gameId).execute();
    expect(keys).toHaveLength(2);
    for (const k of keys) expect(k.secret_enc).toMatch(/^v2:[0-9a-f]{8}:[A-Za-z0-9_-]+$/);
    const game = await t.service.database.db.selectFrom('games').select('nppa_secret_enc').where('game_id', '=', gameId).executeTakeFirstOrThrow();
    expect(game.nppa_secret_enc).toMatch(/^v2:[0-9a-f]{8}:/);
    const pkeys = await t.service.database.db.selectFrom('partner_keys').select('secret_enc').where('partner_id', '=', partner.partnerId).execute();
    expect(pkeys).toHaveLength(2);
    for (const k of pkeys) expect(k.secret_enc).toMatch(/^v2:[0-9a-f]{8}:[A-Za-z0-9_-]+$/);

    const dump = await dumpDatabase(t);
    for (const secret of [given, extra.body.secret_key as string, NPPA_SECRET, partnerSecret, partnerKey2.body.secret_key as string]) {
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice(3, 20)); // no fragment either
    }
  });
});

describe('rotate-secrets (SECRETS_KEY_PREVIOUS)', () => {
  const keyA = randomBytes(32);
  const keyB = randomBytes(32);
  let db: TestDatabase;
  let game: TestGame;
  let legacySecret: string;
  let partner: TestPartner;

  beforeAll(async () => {
    db = await createTestDatabase();
    // Key A era: a game with a key and national-system credentials, a second key still in the
    // old v1 form, and a partner key.
    const a = await startService({ db, secretsKey: keyA });
    try {
      game = await createGame(a);
      expect((await admin(a, 'PATCH', `/admin/v1/games/${game.gameId}`, { nppa })).status).toBe(200);
      legacySecret = `sk_legacy_${randomBytes(8).toString('hex')}`;
      const now = Date.now();
      await a.service.database.db
        .insertInto('game_keys')
        .values({ key_id: `key_legacy_${now}`, game_id: game.gameId, secret_enc: sealV1(keyA, legacySecret), created_at: now - 1000 })
        .execute();
      partner = await createPartner(a, [game.gameId]);
    } finally {
      await a.stop();
    }
  });
  afterAll(async () => db?.drop());

  const env = (current: Buffer, previous?: Buffer) => ({
    DATABASE_URL: db.url,
    SECRETS_KEY: current.toString('base64'),
    ...(previous ? { SECRETS_KEY_PREVIOUS: previous.toString('base64') } : {}),
  });

  async function sealedValues(): Promise<string[]> {
    // The database itself: a service would not start with a key that does not open them all.
    const database = openDatabase(db.url);
    try {
      const d = database.db;
      const g = await d.selectFrom('game_keys').select('secret_enc').execute();
      const p = await d.selectFrom('partner_keys').select('secret_enc').execute();
      const n = await d.selectFrom('games').select('nppa_secret_enc').where('nppa_secret_enc', 'is not', null).execute();
      return [...g.map((r) => r.secret_enc), ...p.map((r) => r.secret_enc), ...n.map((r) => r.nppa_secret_enc as string)];
    } finally {
      await database.close();
    }
  }

  it('refuses, changing nothing, when a value cannot be opened (previous key missing)', async () => {
    const before = await sealedValues();
    const r = await runCli(['rotate-secrets'], env(keyB));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/nothing was changed/);
    expect(await sealedValues()).toEqual(before);
  });

  it('--dry-run reports without writing', async () => {
    const before = await sealedValues();
    const r = await runCli(['rotate-secrets', '--dry-run'], env(keyB, keyA));
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('dry run: would re-seal 4 value(s)');
    expect(r.stdout).toMatch(/^game_keys.secret_enc: \d+ to re-seal, \d+ already current$/m);
    expect(r.stdout).not.toContain(' re-sealed,');
    expect(await sealedValues()).toEqual(before);
  });

  it('re-seals every value with the new key in one run; a service with only the new key still verifies signatures', async () => {
    const r = await runCli(['rotate-secrets'], env(keyB, keyA));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('game_keys.secret_enc: 2 re-sealed, 0 already current');
    expect(r.stdout).toContain('partner_keys.secret_enc: 1 re-sealed');
    expect(r.stdout).toContain('games.nppa_secret_enc: 1 re-sealed');
    const values = await sealedValues();
    expect(values).toHaveLength(4);
    for (const v of values) expect(v.startsWith(`v2:${keyId(keyB)}:`)).toBe(true);

    const again = await runCli(['rotate-secrets'], env(keyB, keyA));
    expect(again.stdout).toContain('re-sealed 0 value(s)');

    const b = await startService({ db, secretsKey: keyB });
    try {
      expect((await signed(b, game, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
      expect((await signed(b, { ...game, secret: legacySecret }, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
      const snap = await b.service.games.snapshot(game.gameId);
      expect(snap?.nppaSecret).toBe(NPPA_SECRET);
      // The partner's signature verifies (404: no binding, rather than 401).
      const q = await partnerGet(b, partner, queryUri(game.gameId, 'nobody'));
      expect(q.body?.error).toBe('binding_not_found');
      const audit = await b.service.database.db.selectFrom('audit_log').selectAll().where('action', '=', 'secrets.rotate').execute();
      expect(audit).toHaveLength(2);
    } finally {
      await b.stop();
    }
  });
});

describe('rolling SECRETS_KEY rotation (docs/operations.md, steps 2 and 3)', () => {
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);
  const b64 = (k: Buffer) => k.toString('base64');
  let db: TestDatabase;
  afterAll(async () => db?.drop());

  it('instances that read the new key and instances that seal with it open each other\'s values', async () => {
    db = await createTestDatabase();
    const first = await startService({ db, env: { SECRETS_KEY: b64(oldKey) } });
    let game: TestGame;
    try {
      game = await createGame(first);
    } finally {
      await first.stop();
    }
    // An instance left out of step 2 (it has only the old key).
    const left = await startService({ db, env: { SECRETS_KEY: b64(oldKey) } });
    // Step 2: every instance reads the new key, still sealing with the old one.
    const reading = await startService({ db, env: { SECRETS_KEY: b64(oldKey), SECRETS_KEY_PREVIOUS: b64(newKey) } });
    // Step 3, rolling: one instance already seals with the new key.
    const sealing = await startService({ db, env: { SECRETS_KEY: b64(newKey), SECRETS_KEY_PREVIOUS: b64(oldKey) } });
    try {
      // Written through the new-key instance: a second key for the game, a new game.
      const k = await admin(sealing, 'POST', `/admin/v1/games/${game.gameId}/keys`, {});
      expect(k.status, k.text).toBe(201);
      const later = await createGame(sealing);
      // Written through the old-key instance: another game.
      const earlier = await createGame(reading);
      for (const t of [reading, sealing]) {
        expect((await signed(t, game, 'POST', '/v1/server/enter-game', { session_id: `s-${randomBytes(4).toString('hex')}`, combo_id: 'p1' })).status).toBe(200);
        expect((await signed(t, { ...game, secret: k.body.secret_key }, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
        for (const g of [later, earlier]) expect((await signed(t, g, 'POST', '/v1/server/create-order', orderBody())).status).toBe(200);
      }
      // The instance left out cannot open what the new key sealed: 503 (retry), not 500.
      const r = await signed(left, later, 'POST', '/v1/server/create-order', orderBody());
      expect(r.status, r.text).toBe(503);
      expect(r.body.error).toBe('service_unavailable');
      // An instance of step 2 restarting in the middle of step 3 still starts.
      const restarted = await startService({ db, env: { SECRETS_KEY: b64(oldKey), SECRETS_KEY_PREVIOUS: b64(newKey) } });
      await restarted.stop();
    } finally {
      await left.stop();
      await reading.stop();
      await sealing.stop();
    }
  });
});
